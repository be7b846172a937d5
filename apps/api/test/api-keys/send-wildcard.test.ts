import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  keyRequest,
  send,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

/**
 * `send:*` does not exist (docs/messaging.md, "Scopes"): no key may ask for it, and a key that
 * holds it from before is granted nothing by it, on any route. Only cancel ever honoured it.
 */
let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  // No key cache: a scope changed in Postgres applies at the next request.
  app = await buildTestApp(world, { API_KEY_CACHE_TTL_MS: '0', SCHEDULE_MIN_AHEAD_SECONDS: '1' })
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

describe('send:*', () => {
  it.each([['send:*'], ['read:*']])('a key request asking for %s is 400, nothing stored', async (scope) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/api-keys/request',
      payload: keyRequest({ scopes: ['send:free-text', scope] }),
    })
    expectError(res, 400, 'VALIDATION_ERROR', /body\.scopes\[1\] must match pattern/)
    const [row] = await world.sql`select count(*)::int as n from api_keys where ${scope} = any(scopes)`
    expect(row?.n).toBe(0)
  })

  it('held from before, it cancels nothing and sends nothing: each route asks for its own scope', async () => {
    const key = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
    const sendAt = new Date(Date.now() + 3_600_000).toISOString()
    const res = await send(app, 'send-text', key.key, { phone: '+5511987654321', text: 'hi', sendAt })
    expect(res.statusCode, res.body).toBe(202)
    // As a key approved when `send:*` could still be asked for.
    await world.sql`update api_keys set scopes = array['send:*', 'read:messages'] where id = ${key.id}`

    const cancel = await app.inject({
      method: 'POST',
      url: `/api/third-party/messages/${res.json().messageId}/cancel`,
      headers: { 'x-api-key': key.key },
    })
    expectError(cancel, 403, 'INSUFFICIENT_SCOPE')
    expectError(await send(app, 'send-text', key.key), 403, 'INSUFFICIENT_SCOPE')
    const batch = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': key.key },
      payload: { messages: [{ type: 'text', phone: '+5511987654321', text: 'hi' }] },
    })
    expectError(
      batch,
      400,
      'VALIDATION_ERROR',
      /No item of the batch is valid.*lacks the "send:free-text" scope/,
    )
  })
})
