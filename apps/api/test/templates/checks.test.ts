import { randomBytes } from 'node:crypto'
import type { BatchAccepted } from '@dispatch/contracts'
import { type FakeWhatsApp, startFakeWhatsApp } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  send,
  startTestWorker,
  storedMessages,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
  validSends,
} from '../helpers.ts'
import { keyOf, syncedSender } from './setup.ts'

const SECRETS_KEY = randomBytes(32).toString('base64')
const shipped = validSends['send-template']

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let checked: { id: string; key: string; senderId: string }
let unchecked: { id: string; key: string; senderId: string }

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  const env = { SECRETS_KEY, WHATSAPP_API_URL: fake.url }
  app = await buildTestApp(world, env)
  const synced = await syncedSender(app, fake)
  checked = { ...(await keyOf(app, synced.id, SEND_SCOPES)), senderId: synced.id }
  // The same catalog on the fake, never synced here: Dispatch checks nothing, Meta refuses later.
  const never = await syncedSender(app, fake, { sync: false })
  unchecked = { ...(await keyOf(app, never.id, SEND_SCOPES)), senderId: never.id }
  // Delivers for the unchecked sender only: what the checked one stores stays countable.
  worker = await startTestWorker(world, {
    ...env,
    WHATSAPP_ACCESS_TOKEN: 'default-token',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
    WORKER_SENDERS: never.id,
    // Its schedule would sync the unchecked sender at once.
    TEMPLATE_SYNC_INTERVAL_MS: '0',
    ADMISSION_INTERVAL_MS: '20',
    MESSAGES_BACKOFF_MS: '20',
  })
})

afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

/** Sends and answers the response, asserting the sender stored nothing for a refused one. */
async function refusedAtTheDoor(payload: object, path: 'send-template' | 'send-text' = 'send-template') {
  const store = storedMessages(world, checked.senderId)
  const before = await store.count()
  const requestsBefore = fake.requests.length
  const res = await send(app, path, checked.key, payload)
  expect(await store.count()).toBe(before)
  await store.close()
  expect(fake.requests.length).toBe(requestsBefore)
  return res
}

describe('a template send checked against the synced catalog', () => {
  it('is accepted when the template is approved and every variable is given', async () => {
    const store = storedMessages(world, checked.senderId)
    const res = await send(app, 'send-template', checked.key, shipped)
    expect(res.statusCode, res.body).toBe(202)
    expect((await store.getJob(res.json().messageId))?.data).toMatchObject({
      message: { type: 'template', body: shipped },
    })
    await store.close()
  })

  it('is refused when no template has that name and language, saying which languages exist', async () => {
    expectError(
      await refusedAtTheDoor({ ...shipped, templateId: 'order_shiped' }),
      422,
      'TEMPLATE_NOT_FOUND',
      /no template "order_shiped" in language pt_BR/,
    )
    expectError(
      await refusedAtTheDoor({ ...shipped, language: 'en_US' }),
      422,
      'TEMPLATE_NOT_FOUND',
      /exists in pt_BR/,
    )
  })

  it('is refused when the template is not approved, naming its status and Meta’s reason', async () => {
    const flash = {
      phone: shipped.phone,
      templateId: 'flash_sale',
      language: 'en_US',
      variables: { '1': '20%' },
    }
    expectError(await refusedAtTheDoor(flash), 422, 'TEMPLATE_NOT_APPROVED', /is PAUSED/)
    const hint = {
      phone: shipped.phone,
      templateId: 'password_hint',
      language: 'en_US',
      variables: { '1': 'x' },
    }
    expectError(await refusedAtTheDoor(hint), 422, 'TEMPLATE_NOT_APPROVED', /REJECTED: INVALID_FORMAT/)
  })

  it('names every missing, extra and wrongly typed variable', async () => {
    const body = expectError(
      await refusedAtTheDoor({
        ...shipped,
        variables: { '1': 'Ana', '3': 'extra' },
        headerVariables: [{ type: 'video', value: null, originalMediaId: 'media-1' }],
        buttonVariables: [],
      }),
      422,
      'TEMPLATE_PARAMETERS_MISMATCH',
    )
    expect(body.message).toContain('body.variables.2 is missing')
    expect(body.message).toContain('body.variables.3 is not in the template')
    expect(body.message).toContain(
      'body.headerVariables[0].type is "video"; the template\'s header takes "image"',
    )
    expect(body.message).toContain('the URL suffix of button 0 is missing')

    const named = expectError(
      await refusedAtTheDoor({
        phone: shipped.phone,
        templateId: 'appointment_reminder',
        language: 'en_US',
        variables: { '1': 'Ana', date: 'Tuesday' },
      }),
      422,
      'TEMPLATE_PARAMETERS_MISMATCH',
    )
    expect(named.message).toContain('body.variables.first_name is missing')
    expect(named.message).toContain(
      "body.variables.1 is the wrong kind: the template's body takes named variables",
    )

    const header = expectError(
      await refusedAtTheDoor({
        phone: shipped.phone,
        templateId: 'we_miss_you',
        language: 'en_US',
        variables: { '1': '10%' },
      }),
      422,
      'TEMPLATE_PARAMETERS_MISMATCH',
    )
    expect(header.message).toContain("body.headerVariables[0] is missing: the header's text takes {{1}}")
  })

  it('checks a free-form message’s fallbackTemplate the same way', async () => {
    expectError(
      await refusedAtTheDoor(
        {
          phone: shipped.phone,
          text: 'Your order left',
          fallbackTemplate: { templateId: 'nope', language: 'pt_BR' },
        },
        'send-text',
      ),
      422,
      'TEMPLATE_NOT_FOUND',
      /body\.fallbackTemplate: no template "nope"/,
    )
    const { phone: _phone, ...fallback } = shipped
    const ok = await send(app, 'send-text', checked.key, {
      phone: shipped.phone,
      text: 'Your order left',
      fallbackTemplate: fallback,
    })
    expect(ok.statusCode, ok.body).toBe(202)
  })

  it('judges each batch item on its own, with its own code, and queues only the valid ones', async () => {
    const store = storedMessages(world, checked.senderId)
    const before = await store.count()
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': checked.key },
      payload: {
        messages: [
          { type: 'template', ...shipped },
          { type: 'template', ...shipped, templateId: 'unknown_one' },
          {
            type: 'template',
            phone: shipped.phone,
            templateId: 'flash_sale',
            language: 'en_US',
            variables: { '1': 'x' },
          },
          { type: 'template', ...shipped, variables: { '1': 'Ana' } },
          { type: 'text', phone: shipped.phone, text: 'hello' },
        ],
      },
    })
    expect(res.statusCode, res.body).toBe(202)
    const batch = res.json<BatchAccepted>()
    expect(batch).toMatchObject({ accepted: 2, rejected: 3 })
    expect(batch.results.map((r) => ('error' in r ? r.error.errorCode : 'queued'))).toEqual([
      'queued',
      'TEMPLATE_NOT_FOUND',
      'TEMPLATE_NOT_APPROVED',
      'TEMPLATE_PARAMETERS_MISMATCH',
      'queued',
    ])
    expect(batch.results[3]).toMatchObject({
      error: { statusCode: 422, message: expect.stringContaining('body.messages[3].variables.2 is missing') },
    })
    expect(await store.count()).toBe(before + 2)
    await store.close()
  })
})

describe('a sender never synced', () => {
  it('keeps today’s behaviour: accepted, then sent or failed afterwards with the platform’s code', async () => {
    const good = await send(app, 'send-template', unchecked.key, shipped)
    const sent = await untilMessageStatus(app, unchecked.key, good.json().messageId, 'sent')
    expect(fake.sendsOf(sent.messageId)).toBe(1)

    const unknown = await send(app, 'send-template', unchecked.key, {
      ...shipped,
      templateId: 'order_shiped',
    })
    expect(unknown.statusCode, unknown.body).toBe(202)
    const failed = await untilMessageStatus(app, unchecked.key, unknown.json().messageId, 'failed')
    expect(failed.lastError?.code).toBe('132001')

    const wrongCount = await send(app, 'send-template', unchecked.key, {
      ...shipped,
      variables: { '1': 'Ana' },
    })
    expect(wrongCount.statusCode, wrongCount.body).toBe(202)
    const mismatch = await untilMessageStatus(app, unchecked.key, wrongCount.json().messageId, 'failed')
    expect(mismatch.lastError?.code).toBe('132000')
  })
})
