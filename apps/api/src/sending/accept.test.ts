import { MESSAGE_TYPES, MessageJob, type MessageType } from '@dispatch/contracts'
import { CONTENT_BODIES } from '@dispatch/testing'
import { Compile } from 'typebox/compile'
import { describe, expect, it } from 'vitest'
import { type AcceptedMessage, acceptMessage, type SendingKey } from './accept.ts'

// The job an accepted send becomes is what the worker reads back (and checks against the same
// contract before delivering it). It is built from a body the route has already validated, so the
// accept path does not check it again per request: these cases hold it to the contract instead.
const jobIsValid = Compile(MessageJob)
const config = {
  MESSAGE_VALIDITY_SECONDS: 14_400,
  MESSAGE_VALIDITY_MIN_SECONDS: 60,
  SCHEDULE_MIN_AHEAD_SECONDS: 60,
}
const now = new Date('2026-11-28T12:00:00.000Z')
const key: SendingKey = {
  id: '5f1e7c1a-8e7b-4c1e-9d43-2b7f0c7a9e10',
  senderId: null,
  transactional: true,
  quietHours: null,
  contentRetentionHours: null,
}
const fallbackTemplate = { templateId: 'order_shipped', language: 'pt_BR', variables: { '1': 'A-1' } }
const alwaysQuiet = { holdUntil: (_: unknown, __: unknown, ___: unknown, due: number) => due + 3600_000 }

/** A body of each kind (CONTENT_BODIES' media carry both an id and a link; a send has one). */
const bodyOf = (type: MessageType): object => {
  const body = CONTENT_BODIES[type] as Record<string, unknown>
  const media = body[type] as { link?: string } | undefined
  if (!media || typeof media !== 'object' || !('link' in media)) return body
  const { link: _, ...byId } = media
  return { [type]: byId }
}

const accept = (type: MessageType, extra: object = {}, apiKey: Partial<SendingKey> = {}, quiet = false) =>
  acceptMessage(
    {
      type,
      body: { phone: '+5511987654321', ...bodyOf(type), ...extra },
      apiKey: { ...key, ...apiKey },
      now,
    },
    config,
    quiet ? alwaysQuiet : undefined,
  )

const expectValid = ({ job }: AcceptedMessage) => {
  const valid = jobIsValid.Check(job)
  expect(valid ? [] : [...jobIsValid.Errors(job)].map((e) => `${e.instancePath} ${e.message}`)).toEqual([])
}

describe('the job an accepted send becomes keeps to the MessageJob contract', () => {
  it.each(MESSAGE_TYPES)('%s, plain', (type) => expectValid(accept(type)))

  it.each(MESSAGE_TYPES)('%s, with every delivery option', (type) =>
    expectValid(
      accept(type, {
        clientReference: 'order-7',
        sendAt: '2026-11-29T09:00:00.000Z',
        validitySeconds: 600,
        priority: 'low',
        contentRetention: 'discard',
        ...(type === 'template' || type === 'reaction' ? {} : { fallbackTemplate }),
      }),
    ),
  )

  it('a username recipient, a batch, a key keeping content for a while, held for quiet hours', () => {
    const accepted = acceptMessage(
      {
        type: 'text',
        body: {
          userId: 'US.13491208655302741918',
          quietHours: { start: '21:00', end: '08:00' },
          ...{ text: 'hi' },
        },
        apiKey: { ...key, contentRetentionHours: 24, senderId: 'sender-2' },
        now,
        batchId: '0190a0b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b',
      },
      config,
      alwaysQuiet,
    )
    expect(accepted.status).toBe('scheduled')
    expect(accepted.job).toMatchObject({ scheduledReason: 'quiet_hours', contentRetentionHours: 24 })
    expectValid(accepted)
  })

  it('a job off the contract is told apart (the check above can fail)', () => {
    const { job } = accept('text')
    expect(jobIsValid.Check({ ...job, expiresAt: 'tomorrow' })).toBe(false)
    expect(jobIsValid.Check({ ...job, message: { type: 'text', body: {} } })).toBe(false)
  })
})
