import { setTimeout as sleep } from 'node:timers/promises'
import { createDb, type Db, findWebhookEvents, type NewWebhookAttempt } from '@dispatch/db'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AttemptRecorder } from '../../src/webhooks/attempt-recorder.ts'
import { createWebhooksWorld, type WebhooksWorld } from './webhooks-world.ts'

let world: WebhooksWorld
let db: Db
let closeDb: () => Promise<void>
let endpointId: string
let apiKeyId: string

beforeAll(async () => {
  world = await createWebhooksWorld()
  ;({ db, close: closeDb } = createDb(world.settings.databaseUrl, { max: 2 }))
  const [endpoint] = await world.endpoints(['https://hooks.acme.test/dispatch'])
  endpointId = endpoint?.id as string
  apiKeyId = endpoint?.apiKeyId as string
})
afterAll(async () => {
  await closeDb()
  await world.close()
})

let eventCount = 0
const attempt = (): NewWebhookAttempt => ({
  endpointId,
  eventId: `msg_recorder_${++eventCount}`,
  attempt: 1,
  statusCode: 204,
  durationMs: 3,
  responseExcerpt: '',
  error: null,
  nextRetryAt: null,
  createdAt: new Date(),
})

/** The transaction that wrote each attempt, by event id: attempts of one insert share one. */
async function writtenBy(eventIds: string[]) {
  const rows = await world.sql<Array<{ event_id: string; xmin: string }>>`
    select event_id, xmin::text from webhook_attempts where event_id = any(${eventIds})`
  return new Map(rows.map((row) => [row.event_id, row.xmin]))
}

describe('AttemptRecorder', () => {
  it('writes the attempts of one linger in one insert, and those that come after in the next', async () => {
    const recorder = new AttemptRecorder(db, pino({ level: 'silent' }), {
      lingerMs: 1000,
      maxBatch: 1000,
      maxWaiters: 100,
    })
    const first = [attempt(), attempt(), attempt()]
    // Recorded 20 ms apart, as POSTs' answers come: the first waits for the others.
    const recorded: Promise<void>[] = []
    for (const a of first) {
      recorded.push(recorder.record(a, 'job-1'))
      await sleep(20)
    }
    await Promise.all(recorded)
    const later = attempt()
    await recorder.record(later, 'job-2')

    const by = await writtenBy([...first, later].map((a) => a.eventId))
    expect(by.size).toBe(4) // each recorded once its record() resolved
    expect(new Set(first.map((a) => by.get(a.eventId))).size).toBe(1)
    expect(by.get(later.eventId)).not.toBe(by.get(first[0]?.eventId as string))
  })

  it('writes a full batch without waiting out the linger', async () => {
    const recorder = new AttemptRecorder(db, pino({ level: 'silent' }), {
      lingerMs: 60_000,
      maxBatch: 3,
      maxWaiters: 100,
    })
    const batch = [attempt(), attempt(), attempt()]
    await Promise.all(batch.map((a) => recorder.record(a, 'bundle'))) // would time the test out after 60 s
    const by = await writtenBy(batch.map((a) => a.eventId))
    expect(new Set(batch.map((a) => by.get(a.eventId))).size).toBe(1)
  })

  it('writes a batch every job it may hold waits on without waiting out the linger', async () => {
    const recorder = new AttemptRecorder(db, pino({ level: 'silent' }), {
      lingerMs: 60_000,
      maxBatch: 1000,
      maxWaiters: 2,
    })
    // Two rows of one bundle are one waiter: the batch waits (a third waiter is another job).
    const bundle = [attempt(), attempt()]
    const bundled = Promise.all(bundle.map((a) => recorder.record(a, 'bundle')))
    const waited = await Promise.race([bundled.then(() => 'written'), sleep(300).then(() => 'waiting')])
    expect(waited).toBe('waiting')
    const single = attempt()
    await Promise.all([bundled, recorder.record(single, 'single')]) // would time out after 60 s
    const by = await writtenBy([...bundle, single].map((a) => a.eventId))
    expect(new Set(by.values()).size).toBe(1)
  })

  it("stores a receiver's answer as it came: quotes, backslashes, braces, commas, NULL; NUL dropped", async () => {
    const recorder = new AttemptRecorder(db, pino({ level: 'silent' }), {
      lingerMs: 1,
      maxBatch: 1000,
      maxWaiters: 100,
    })
    const answers = ['{"ok":"yes, \\"quoted\\""}', 'C:\\path\\', 'NULL', '', 'a\0b', '{}', 'line\nbreak\t"']
    const rows = answers.map((responseExcerpt) => ({ ...attempt(), responseExcerpt, error: responseExcerpt }))
    await Promise.all(rows.map((row) => recorder.record(row, 'job')))
    const stored = await world.sql<Array<{ event_id: string; response_excerpt: string; error: string }>>`
      select event_id, response_excerpt, error from webhook_attempts
      where event_id = any(${rows.map((r) => r.eventId)})`
    const byEvent = new Map(stored.map((row) => [row.event_id, row]))
    rows.forEach((row, i) => {
      const expected = (answers[i] as string).replaceAll('\0', '')
      expect(byEvent.get(row.eventId)?.response_excerpt).toBe(expected)
      expect(byEvent.get(row.eventId)?.error).toBe(expected)
    })
  })

  it('resolves when Postgres refuses the write: deliveries are not held back by their log', async () => {
    const away = createDb('postgres://postgres@127.0.0.1:1/none', { max: 1 })
    const recorder = new AttemptRecorder(away.db, pino({ level: 'silent' }), {
      lingerMs: 1,
      maxBatch: 1000,
      maxWaiters: 100,
    })
    await expect(recorder.record(attempt(), 'job')).resolves.toBeUndefined()
    await away.close()
  })
})

describe('findWebhookEvents', () => {
  it('finds events whose ids carry their time and older ids alike, and skips ids not stored', async () => {
    const events = await world.sql<Array<{ id: string }>>`
      insert into webhook_events (id, api_key_id, type, message_id, sequence, payload)
      select id, ${apiKeyId}, 'message.delivered', gen_random_uuid(), 1,
        jsonb_build_object('type', 'message.delivered', 'data', jsonb_build_object('n', n))
      from (values
        ('msg_' || lpad(to_hex(floor(extract(epoch from now()) * 1000)::bigint), 12, '0') || '7'
          || substr(replace(gen_random_uuid()::text, '-', ''), 14), 1),
        ('msg_' || replace(gen_random_uuid()::text, '-', ''), 2)) as v(id, n)
      returning id`
    const ids = events.map((e) => e.id)
    const found = await findWebhookEvents(db, [...ids, 'msg_0000000000007000000000000000000'])
    expect(found.map((e) => e.id).sort()).toEqual([...ids].sort())
    expect(found.map((e) => (e.payload as { data: { n: number } }).data.n).sort()).toEqual([1, 2])
    expect(await findWebhookEvents(db, [ids[0] as string])).toHaveLength(1)
  })
})
