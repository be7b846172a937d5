import { randomUUID } from 'node:crypto'
import type { AdminMessageView } from '@dispatch/contracts'
import { type FakeWhatsApp, startFakeWhatsApp } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'

/**
 * `POST /api/admin/messages/:id/cancel`: an admin cancels any key's scheduled message, audited; it
 * is never sent. A message a worker took is 409, an unknown or malformed id 404, each with the
 * spec's error body.
 */

const NUMBER = '100000000000451'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let key: { id: string; key: string }

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '10000', SCHEDULE_MIN_AHEAD_SECONDS: '1' })
  worker = await startTestWorker(world, {
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-admin-cancel-token',
    WHATSAPP_PHONE_NUMBER_ID: NUMBER,
    WORKER_QUEUES: 'messages',
    MESSAGE_CLAIM_KEEP_MS: '0',
  })
  key = await activeKey(app, { scopes: SEND_SCOPES })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

const cancel = (id: string, token = ADMIN.ana) =>
  app.inject({ method: 'POST', url: `/api/admin/messages/${id}/cancel`, headers: asAdmin(token) })
const audits = async (id: string) =>
  world.sql`select actor, action, target_type, details from admin_audit_log where target_id = ${id}`

describe('POST /api/admin/messages/:id/cancel', () => {
  it('cancels a scheduled message of any key: never sent, audited under the admin, answered again once canceled', async () => {
    // Due in two seconds: were the cancel not to hold, the worker would send it while the test waits.
    const sendAt = new Date(Date.now() + 2000).toISOString()
    const accepted = await send(app, 'send-text', key.key, { phone: '+5511987650451', text: 'Later', sendAt })
    expect(accepted.statusCode, accepted.body).toBe(202)
    const id = accepted.json<{ messageId: string }>().messageId

    const res = await cancel(id, ADMIN.ops)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json<AdminMessageView>()).toMatchObject({
      messageId: id,
      status: 'canceled',
      apiKeyId: key.id,
    })
    expect(await audits(id)).toEqual([
      {
        actor: 'ops',
        action: 'message.cancel',
        target_type: 'message',
        details: expect.objectContaining({ from: 'scheduled', to: 'canceled', apiKeyId: key.id, sendAt }),
      },
    ])
    await new Promise((resolve) => setTimeout(resolve, 3000))
    expect(fake.sendsOf(id)).toBe(0)
    expect((await untilMessageStatus(app, key.key, id, 'canceled')).status).toBe('canceled')

    // Again: the same answer, no second audit row.
    const again = await cancel(id)
    expect(again.statusCode, again.body).toBe(200)
    expect(again.json<AdminMessageView>().status).toBe('canceled')
    expect(await audits(id)).toHaveLength(1)
  })

  it('refuses a message a worker has taken with 409, and leaves it as it is', async () => {
    const accepted = await send(app, 'send-text', key.key, { phone: '+5511987650452', text: 'Now' })
    const id = accepted.json<{ messageId: string }>().messageId
    await untilMessageStatus(app, key.key, id, 'sent')
    expectError(await cancel(id), 409, 'INVALID_STATE_TRANSITION', /is sent: only a queued or scheduled/)
    expect(await audits(id)).toHaveLength(0)
    expect(fake.sendsOf(id)).toBe(1)
  })

  it('answers 404 for an unknown or malformed id, and 401 without an admin', async () => {
    expectError(await cancel(randomUUID()), 404, 'NOT_FOUND')
    expectError(await cancel('not-a-message'), 404, 'NOT_FOUND')
    const anonymous = await app.inject({ method: 'POST', url: `/api/admin/messages/${randomUUID()}/cancel` })
    expect(anonymous.statusCode).toBe(401)
    // A key is no admin, even on its own message.
    const accepted = await send(app, 'send-text', key.key, {
      phone: '+5511987650453',
      text: 'Mine',
      sendAt: new Date(Date.now() + 3600_000).toISOString(),
    })
    const id = accepted.json<{ messageId: string }>().messageId
    const byKey = await app.inject({
      method: 'POST',
      url: `/api/admin/messages/${id}/cancel`,
      headers: { authorization: `Bearer ${key.key}` },
    })
    expect(byKey.statusCode).toBe(401)
  })
})
