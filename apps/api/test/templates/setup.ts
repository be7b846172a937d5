import { randomBytes } from 'node:crypto'
import type { SenderView } from '@dispatch/contracts'
import { demoTemplates, type FakeTemplate, type FakeWhatsApp, messageWebhook } from '@dispatch/testing'
import type { FastifyInstance } from 'fastify'
import { expect } from 'vitest'
import { activeKey, asAdmin, postPlatformWebhook } from '../helpers.ts'

let numbers = 0

/**
 * A sender of its own with a WhatsApp Business Account on the fake, holding `templates` (the fake
 * CLI's demo catalog by default), synced; and its number linked to that account on the fake, so the
 * fake refuses template sends as Meta would.
 */
export async function syncedSender(
  app: FastifyInstance,
  fake: FakeWhatsApp,
  options: { templates?: FakeTemplate[]; sync?: boolean; body?: object } = {},
): Promise<SenderView & { token: string }> {
  const wabaId = `4${String(Date.now()).slice(-10)}${numbers}`
  const phoneNumberId = `5${String(Date.now()).slice(-10)}${numbers++}`
  const token = `EAAG${randomBytes(16).toString('hex')}`
  fake.templates.set(wabaId, options.templates ?? demoTemplates())
  fake.templates.link(phoneNumberId, wabaId)
  const created = await app.inject({
    method: 'POST',
    url: '/api/admin/senders',
    headers: asAdmin(),
    payload: { phoneNumberId, displayName: 'Checked sender', accessToken: token, wabaId, ...options.body },
  })
  expect(created.statusCode, created.body).toBe(201)
  const sender = created.json<SenderView>()
  if (options.sync !== false) {
    const synced = await app.inject({
      method: 'POST',
      url: `/api/admin/senders/${sender.id}/templates/sync`,
      headers: asAdmin(),
    })
    expect(synced.statusCode, synced.body).toBe(200)
  }
  return { ...sender, token }
}

/** An approved key with these scopes whose messages go out through `senderId`. */
export async function keyOf(app: FastifyInstance, senderId: string, scopes: string[]) {
  const key = await activeKey(app, { scopes })
  const bound = await app.inject({
    method: 'PATCH',
    url: `/api/admin/api-keys/${key.id}`,
    headers: asAdmin(),
    payload: { senderId },
  })
  expect(bound.statusCode, bound.body).toBe(200)
  return key
}

let phones = 0
/** A recipient no test of this file wrote to yet. */
export const newPhone = () => `+55119${String(Date.now()).slice(-6)}${phones++}`.slice(0, 14)

/** A text from `phone` to the business number `phoneNumberId`, at `at`, as Meta's webhook delivers it. */
export function replyFrom(
  app: FastifyInstance,
  appSecret: string,
  phoneNumberId: string,
  phone: string,
  at = Date.now(),
) {
  return postPlatformWebhook(
    app,
    messageWebhook(phoneNumberId, {
      from: phone.slice(1),
      id: `wamid.${randomBytes(8).toString('hex')}`,
      timestamp: String(Math.floor(at / 1000)),
      type: 'text',
      text: { body: 'hi' },
    }),
    appSecret,
  )
}
