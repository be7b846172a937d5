import { randomUUID } from 'node:crypto'
import { DEFAULT_SENDER_ID } from '@dispatch/contracts'
import { insertApiKey, owned } from '@dispatch/db'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type ApiDeps, createDeps, createLogger, parseApiConfig } from '../../src/app.ts'
import type { SendingKey } from '../../src/sending/accept.ts'
import { createSending, type Sending } from '../../src/sending/sending.ts'
import { submit } from '../../src/sending/submit.ts'
import { createWorld, type TestWorld } from '../helpers.ts'

/**
 * `submit` is sending's one entry point, and needs no Fastify: called here with nothing but the
 * API's connections (real Postgres and Redis), as a campaign or an import would call it, it judges
 * each send, stores the valid ones for delivery and lists a scheduled one at once.
 */
let world: TestWorld
let deps: ApiDeps
let sending: Sending
/** A key as the routes hand it (its row), not transactional: `priority: "high"` is refused. */
let key: SendingKey
beforeAll(async () => {
  world = await createWorld()
  const config = parseApiConfig({
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl,
    QUEUE_PREFIX: world.queuePrefix,
    SCHEDULE_MIN_AHEAD_SECONDS: '60',
    LOG_LEVEL: 'silent',
  })
  deps = createDeps(config, { logger: createLogger(config) })
  // The store's connection fails fast (no offline queue): wait until it is up, as a server's start does.
  const { redis } = deps
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve))
  sending = createSending(deps)
  await sending.rules.start(config.TEMPLATE_CACHE_REFRESH_MS)
  key = await insertApiKey(deps.db, {
    keyHash: randomUUID(),
    keyPrefix: 'dsp_test',
    environment: 'development',
    clientName: 'Campaigns',
    email: 'campaigns@acme.test',
    scopes: ['send:free-text'],
    requestedTenantId: null,
    createdAt: new Date(),
  })
})
afterAll(async () => {
  sending?.rules.stop()
  await deps?.close()
  await world?.close()
})

const text = (field: string, extra: Record<string, unknown> = {}) => ({
  type: 'text' as const,
  body: { phone: '+5511987654321', text: 'Your code is 123456', ...extra },
  field,
})

it('stores a valid send for delivery, with no request in sight', async () => {
  const [answer] = await submit(sending, key, [text('body')])
  if (!answer || !('accepted' in answer)) throw new Error(`refused: ${JSON.stringify(answer)}`)
  expect(answer.accepted.status).toBe('queued')
  const stored = await sending.messages.find(DEFAULT_SENDER_ID, answer.accepted.job.messageId)
  expect(stored?.job.data).toMatchObject({
    apiKeyId: key.id,
    senderId: DEFAULT_SENDER_ID,
    message: { type: 'text', body: { phone: '+5511987654321', text: 'Your code is 123456' } },
  })
})

it('answers each send of a submission on its own: the refused one with its error, the scheduled one listed', async () => {
  const rate = { spent: 0, givenBack: 0 }
  const sendAt = new Date(Date.now() + 3_600_000).toISOString()
  const answers = await submit(
    sending,
    key,
    [text('body.messages[0]', { sendAt }), text('body.messages[1]', { priority: 'high' })],
    {
      batchId: randomUUID(),
      rate: {
        spend: async (count) => {
          rate.spent += count
        },
        giveBack: async (count) => {
          rate.givenBack += count
        },
      },
    },
  )
  const [scheduled, refused] = answers
  if (!scheduled || !('accepted' in scheduled)) throw new Error(`refused: ${JSON.stringify(scheduled)}`)
  expect(scheduled.accepted).toMatchObject({ status: 'scheduled', job: { sendAt } })
  expect(refused).toMatchObject({ error: { errorCode: 'PRIORITY_NOT_ALLOWED', statusCode: 403 } })
  expect((refused as { error: Error }).error.message).toMatch(/^body\.messages\[1\]\.priority/)
  // Only what was judged valid is counted against the key's rate, and none was refused at the store.
  expect(rate).toEqual({ spent: 1, givenBack: 0 })
  const caller = { apiKeyId: key.id, tenantId: null, senderId: DEFAULT_SENDER_ID }
  const listed = await owned(deps.db, caller).messages.find(scheduled.accepted.job.messageId)
  expect(listed).toMatchObject({ status: 'scheduled', apiKeyId: key.id })
})
