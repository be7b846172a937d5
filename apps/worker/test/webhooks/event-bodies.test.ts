import { setTimeout as sleep } from 'node:timers/promises'
import { webhookEventBody } from '@dispatch/contracts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventBodies } from '../../src/webhooks/event-bodies.ts'
import { createWebhooksWorld, proxiedDb, type WebhooksWorld } from './webhooks-world.ts'

let world: WebhooksWorld
let apiKeyId: string
/** The event reads a test's Postgres connection sent. */
let reads = 0
let proxied: Awaited<ReturnType<typeof proxiedDb>>

beforeAll(async () => {
  world = await createWebhooksWorld()
  const [endpoint] = await world.endpoints(['https://hooks.acme.test/dispatch'])
  apiKeyId = endpoint?.apiKeyId as string
  proxied = await proxiedDb(world, (query) => {
    if (query.includes('from webhook_events v')) reads++
  })
})
afterAll(async () => {
  await proxied.close()
  await world.close()
})

/** Stored events as the trigger writes them (ids carrying their time), `n` in their data. */
async function storeEvents(count: number): Promise<string[]> {
  const rows = await world.sql<Array<{ id: string }>>`
    insert into webhook_events (id, api_key_id, type, message_id, sequence, payload)
    select 'msg_' || lpad(to_hex(floor(extract(epoch from now()) * 1000)::bigint), 12, '0') || '7'
        || substr(replace(gen_random_uuid()::text, '-', ''), 14), ${apiKeyId}, 'message.delivered',
      gen_random_uuid(), 2,
      jsonb_build_object('type', 'message.delivered', 'timestamp', '2026-12-02T10:00:00.000Z',
        'data', jsonb_build_object('status', 'delivered', 'clientReference', 'order-' || n))
    from generate_series(1, ${count}) n
    returning id`
  return rows.map((row) => row.id)
}

const bodyOf = async (id: string) => {
  const [row] = await world.sql<[{ payload: unknown }]>`select payload from webhook_events where id = ${id}`
  return webhookEventBody(row?.payload)
}

describe('EventBodies', () => {
  it("reads a key's events once for the bundles of all its endpoints, and sends each as stored", async () => {
    const ids = await storeEvents(5)
    const bodies = new EventBodies(proxied.db, { ttlMs: 60_000, maxEntries: 1000 })
    const before = reads
    // Three endpoints' bundles of the same events, the third after the first two were answered.
    const [first, second] = await Promise.all([bodies.of(ids), bodies.of([...ids].reverse())])
    const third = await bodies.of(ids.slice(1, 3))
    expect(reads - before).toBe(1)
    for (const id of ids) {
      expect(first.get(id)).toEqual({ type: 'message.delivered', body: await bodyOf(id) })
      expect(second.get(id)).toEqual(first.get(id))
    }
    expect([...third.keys()]).toEqual(ids.slice(1, 3))
  })

  it('reads an event changed since (an erasure) as it now is once the time to live has passed', async () => {
    const [id] = (await storeEvents(1)) as [string]
    const bodies = new EventBodies(proxied.db, { ttlMs: 100, maxEntries: 1000 })
    expect((await bodies.of([id])).get(id)?.body).toContain('order-1')
    await world.sql`update webhook_events set payload = jsonb_set(payload, '{data}', '{"redacted": true}') where id = ${id}`
    await sleep(150)
    const now = (await bodies.of([id])).get(id)?.body
    expect(now).toBe(await bodyOf(id))
    expect(now).not.toContain('order-1')
  })

  it('leaves out an event that is gone, and asks for it again next time', async () => {
    const ids = await storeEvents(2)
    const gone = 'msg_00000000000070000000000000000000'
    const bodies = new EventBodies(proxied.db, { ttlMs: 60_000, maxEntries: 1000 })
    const before = reads
    expect([...(await bodies.of([...ids, gone])).keys()]).toEqual(ids)
    expect([...(await bodies.of([gone, ...ids])).keys()]).toEqual(ids)
    // The stored two came from the first read; the gone one was asked for twice.
    expect(reads - before).toBe(2)
  })

  it('holds no read that failed: with Postgres back, the events are read and sent', async () => {
    const ids = await storeEvents(3)
    const bodies = new EventBodies(proxied.db, { ttlMs: 60_000, maxEntries: 1000 })
    await proxied.proxy.cut()
    await expect(Promise.all([bodies.of(ids), bodies.of(ids.slice(0, 1))])).rejects.toThrow()
    await proxied.proxy.restore()
    const found = await bodies.of(ids)
    expect([...found.keys()]).toEqual(ids)
    expect(found.get(ids[0] as string)?.body).toBe(await bodyOf(ids[0] as string))
  })

  it('keeps at most its bound, dropping the oldest reads first', async () => {
    const ids = await storeEvents(6)
    const bodies = new EventBodies(proxied.db, { ttlMs: 60_000, maxEntries: 3 })
    await bodies.of(ids.slice(0, 3))
    await bodies.of(ids.slice(3, 6))
    const before = reads
    // The newest three are held; the oldest three were dropped and are read again.
    await bodies.of(ids.slice(3, 6))
    expect(reads - before).toBe(0)
    await bodies.of(ids.slice(0, 1))
    expect(reads - before).toBe(1)
  })
})
