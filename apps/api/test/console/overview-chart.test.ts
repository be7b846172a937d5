import { randomUUID } from 'node:crypto'
import { createDb, messagesPerMinute } from '@dispatch/db'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createWorld, type TestWorld } from '../helpers.ts'

/**
 * The overview's chart, exactly: each status counted in the bucket of its own time (not its
 * acceptance's), from `since` on, whatever bucket size; the messages it reads are those accepted
 * from `acceptedSince` (a validity before `since`), so a message accepted before `since` still
 * counts the statuses it reached after it.
 */

let world: TestWorld
let direct: ReturnType<typeof createDb>
const SINCE = new Date('2026-03-02T10:00:00Z')
const ACCEPTED_SINCE = new Date('2026-03-02T06:00:00Z')

type Times = Partial<Record<'sent' | 'delivered' | 'read' | 'failed' | 'expired' | 'canceled', string>>

async function insert(apiKeyId: string, accepted: string, times: Times) {
  const at = (time?: string) => (time ? `2026-03-02T${time}Z` : null)
  await world.sql`
    insert into messages (id, api_key_id, type, phone, payload, status, attempts, accepted_at, sent_at,
      delivered_at, read_at, failed_at, expired_at, canceled_at, updated_at)
    values (${randomUUID()}, ${apiKeyId}, 'text', '+5511987654321', ${world.sql.json({ text: 'hi' })}, 'queued', 1,
      ${at(accepted)}, ${at(times.sent)}, ${at(times.delivered)}, ${at(times.read)}, ${at(times.failed)},
      ${at(times.expired)}, ${at(times.canceled)}, ${at(accepted)})`
}

beforeAll(async () => {
  world = await createWorld()
  direct = createDb(world.databaseUrl, { max: 1 })
  const [key] = await world.sql<{ id: string }[]>`
    insert into api_keys (key_hash, key_prefix, environment, client_name, email, scopes, status)
    values (${`chart-${randomUUID()}`}, 'dk_dev_', 'development', 'chart', 'chart@dispatch.local', '{}', 'approved')
    returning id`
  const id = key?.id as string
  // Read within its acceptance's minute.
  await insert(id, '10:06:00', { sent: '10:06:01', delivered: '10:06:03', read: '10:06:40' })
  // Read an hour and a half later.
  await insert(id, '10:05:00', { sent: '10:05:01', delivered: '10:05:03', read: '11:30:00' })
  // Accepted in the last instant of a bucket, sent in the next.
  await insert(id, '10:59:59.900', { sent: '11:00:00.100' })
  // Accepted and sent before `since`, delivered after it: only its delivery is in the chart.
  await insert(id, '09:30:00', { sent: '09:30:01', delivered: '10:10:00' })
  await insert(id, '11:10:00', { failed: '11:10:05' })
  await insert(id, '11:15:00', { expired: '12:15:00' })
  await insert(id, '12:00:00', { canceled: '12:10:00' })
})
afterAll(async () => {
  await direct?.close()
  await world?.close()
})

/**
 * The chart's rows as `HH:MM status count`, sorted; counted in one statement, and again cut into
 * three spans of acceptance time counted at once (how a long window is read): the same rows.
 */
async function chart(bucketSeconds: number) {
  const lines = (rows: Awaited<ReturnType<typeof messagesPerMinute>>) =>
    rows.map((row) => `${row.minute.toISOString().slice(11, 16)} ${row.status} ${row.count}`).sort()
  const whole = await messagesPerMinute(direct.db, SINCE, ACCEPTED_SINCE, bucketSeconds, { slices: 1 })
  // Cut at 08:20 and 10:40: messages on each side of each cut.
  const until = new Date('2026-03-02T13:00:00Z')
  const sliced = await messagesPerMinute(direct.db, SINCE, ACCEPTED_SINCE, bucketSeconds, {
    until,
    slices: 3,
  })
  expect(lines(sliced)).toEqual(lines(whole))
  for (const rows of [whole, sliced]) {
    const minutes = rows.map((row) => row.minute.getTime())
    expect(minutes, 'oldest first').toEqual([...minutes].sort((a, b) => a - b))
  }
  return lines(whole)
}

describe('messagesPerMinute', () => {
  it('counts each status in the hour it was reached', async () => {
    expect(await chart(3600)).toEqual(
      [
        '10:00 queued 3',
        '10:00 sent 2',
        '10:00 delivered 3',
        '10:00 read 1',
        '11:00 queued 2',
        '11:00 sent 1',
        '11:00 read 1',
        '11:00 failed 1',
        '12:00 queued 1',
        '12:00 expired 1',
        '12:00 canceled 1',
      ].sort(),
    )
  })

  it('counts the same messages by quarter hour and by minute', async () => {
    expect(await chart(900)).toEqual(
      [
        '10:00 queued 2',
        '10:00 sent 2',
        '10:00 delivered 3',
        '10:00 read 1',
        '10:45 queued 1',
        '11:00 sent 1',
        '11:00 queued 1',
        '11:00 failed 1',
        '11:15 queued 1',
        '11:30 read 1',
        '12:00 queued 1',
        '12:00 canceled 1',
        '12:15 expired 1',
      ].sort(),
    )
    expect(await chart(60)).toEqual(
      [
        '10:05 queued 1',
        '10:05 sent 1',
        '10:05 delivered 1',
        '10:06 queued 1',
        '10:06 sent 1',
        '10:06 delivered 1',
        '10:06 read 1',
        '10:10 delivered 1',
        '10:59 queued 1',
        '11:00 sent 1',
        '11:10 queued 1',
        '11:10 failed 1',
        '11:15 queued 1',
        '11:30 read 1',
        '12:00 queued 1',
        '12:10 canceled 1',
        '12:15 expired 1',
      ].sort(),
    )
  })
})
