import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EndpointCache } from '../../src/webhooks/endpoint-cache.ts'
import { createWebhooksWorld, proxiedDb, type WebhooksWorld } from './webhooks-world.ts'

let world: WebhooksWorld
/** The endpoint reads a test's Postgres connection sent. */
let reads = 0
let proxied: Awaited<ReturnType<typeof proxiedDb>>

beforeAll(async () => {
  world = await createWebhooksWorld()
  proxied = await proxiedDb(world, (query) => {
    if (query.includes('from "webhook_endpoints"')) reads++
  })
})
afterAll(async () => {
  await proxied.close()
  await world.close()
})

const endpoint = async (url: string) => (await world.endpoints([url]))[0] as { id: string }

describe('EndpointCache', () => {
  it('makes one read for every delivery asking at once, and reuses it until the time to live', async () => {
    const { id } = await endpoint('https://hooks.acme.test/one')
    const cache = new EndpointCache(proxied.db, 60_000)
    const before = reads
    const found = await Promise.all(Array.from({ length: 8 }, () => cache.get(id)))
    expect(new Set(found.map((e) => e?.url))).toEqual(new Set(['https://hooks.acme.test/one']))
    await cache.get(id)
    expect(reads - before).toBe(1)
  })

  it('shows a change (disabled) once the time to live has passed, or at once when told to forget', async () => {
    const { id } = await endpoint('https://hooks.acme.test/two')
    const cache = new EndpointCache(proxied.db, 100)
    expect((await cache.get(id))?.enabled).toBe(true)
    await world.sql`update webhook_endpoints set enabled = false where id = ${id}`
    await sleep(150)
    expect((await cache.get(id))?.enabled).toBe(false)
    await world.sql`update webhook_endpoints set enabled = true where id = ${id}`
    cache.forget(id)
    expect((await cache.get(id))?.enabled).toBe(true)
  })

  it('keeps no read that failed: with Postgres back, the endpoint is read', async () => {
    const { id } = await endpoint('https://hooks.acme.test/three')
    const cache = new EndpointCache(proxied.db, 60_000)
    await proxied.proxy.cut()
    await expect(Promise.all([cache.get(id), cache.get(id)])).rejects.toThrow()
    await proxied.proxy.restore()
    expect((await cache.get(id))?.url).toBe('https://hooks.acme.test/three')
  })
})
