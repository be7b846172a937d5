import {
  beginFallbackCall,
  createDb,
  decideFallback,
  findFallback,
  generateApiKey,
  insertApiKey,
  recordFallbackSent,
} from '@dispatch/db'
import { messageIdAt } from '@dispatch/runtime'
import { twilioSignature } from '@dispatch/runtime/sms'
import { type FakeSms, startFakeSms } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, createWorld, expectError, type TestApp, type TestWorld } from '../helpers.ts'

/** The public URL the provider was given, as a proxy in front of the API would serve it. */
const PUBLIC_URL = 'https://dispatch.example.com/api/webhooks/sms/status'

let world: TestWorld
let app: TestApp
let fake: FakeSms
let client: ReturnType<typeof createDb>
let apiKeyId: string

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeSms()
  app = await buildTestApp(world, {
    SMS_PROVIDER: 'twilio',
    SMS_API_URL: fake.url,
    SMS_ACCOUNT_SID: fake.accountSid,
    SMS_AUTH_TOKEN: fake.authToken,
    SMS_FROM: '+15005550006',
    SMS_STATUS_CALLBACK_URL: PUBLIC_URL,
  })
  client = createDb(world.databaseUrl, { max: 2 })
  const { keyHash, keyPrefix } = generateApiKey('development')
  apiKeyId = (
    await insertApiKey(client.db, {
      keyHash,
      keyPrefix,
      environment: 'development',
      clientName: 'Acme',
      email: 'ops@acme.test',
      scopes: ['send:free-text', 'send:sms-fallback'],
      requestedTenantId: null,
      createdAt: new Date(),
    })
  ).id
})
afterAll(async () => {
  await app?.close()
  await client?.close()
  await fake?.close()
  await world?.close()
})

let offset = 0
/** A failed message whose fallback SMS the fake provider took: its sid, as the worker records it. */
async function fallbackSms(): Promise<{ messageId: string; sid: string }> {
  const acceptedAt = new Date(Date.now() - 60_000 + offset++)
  const messageId = messageIdAt(acceptedAt.getTime())
  await world.sql`
    insert into messages (id, api_key_id, type, phone, payload, status, accepted_at)
    values (${messageId}, ${apiKeyId}, 'text', '+4915112345678', ${world.sql.json({ text: 'hi' })}, 'failed',
      ${acceptedAt.toISOString()})`
  const at = new Date()
  await decideFallback(client.sql, {
    messageId,
    acceptedAt,
    reason: 'whatsapp_undeliverable',
    reasonCode: '131026',
    fromStatuses: ['failed'],
    at,
  })
  await beginFallbackCall(client.sql, { messageId, acceptedAt, at })
  const created = await fetch(`${fake.url}/2010-04-01/Accounts/${fake.accountSid}/Messages.json`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')}`,
    },
    body: new URLSearchParams({
      To: '+4915112345678',
      From: '+15005550006',
      Body: 'hi',
      StatusCallback: PUBLIC_URL,
    }),
  })
  const { sid } = (await created.json()) as { sid: string }
  await recordFallbackSent(client.sql, {
    messageId,
    provider: 'twilio',
    providerMessageId: sid,
    providerStatus: 'queued',
    at,
  })
  return { messageId, sid }
}

/** Posts a callback as the provider would, to the path the proxy forwards to. */
const deliver = (signed: ReturnType<FakeSms['statusCallback']>, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/api/webhooks/sms/status',
    headers: { ...signed.headers, ...headers },
    payload: signed.body,
  })

describe('POST /api/webhooks/sms/status', () => {
  it('moves the SMS forward with each signed report', async () => {
    const { messageId, sid } = await fallbackSms()
    expect((await deliver(fake.statusCallback(sid, 'sent'))).statusCode).toBe(204)
    expect((await findFallback(client.sql, messageId))?.providerStatus).toBe('sent')
    const res = await deliver(fake.statusCallback(sid, 'undelivered', { errorCode: '30006' }))
    expect(res.statusCode, res.body).toBe(204)
    expect(await findFallback(client.sql, messageId)).toMatchObject({
      state: 'sent',
      providerStatus: 'undelivered',
      errorCode: '30006',
    })
  })

  it('acknowledges a duplicate or late report and changes nothing', async () => {
    const { messageId, sid } = await fallbackSms()
    const delivered = fake.statusCallback(sid, 'delivered')
    expect((await deliver(delivered)).statusCode).toBe(204)
    const first = await findFallback(client.sql, messageId)
    expect(first?.providerStatus).toBe('delivered')
    expect((await deliver(delivered)).statusCode).toBe(204)
    expect((await deliver(fake.statusCallback(sid, 'sent'))).statusCode).toBe(204)
    expect(await findFallback(client.sql, messageId)).toEqual(first)
  })

  it('acknowledges a report of an SMS it does not know, so the provider stops retrying', async () => {
    const { sid } = await fallbackSms()
    const signed = fake.statusCallback(sid, 'delivered')
    const unknown = 'SM00000000000000000000000000000000'
    const params = { ...signed.params, MessageSid: unknown, SmsSid: unknown }
    // Signed as the provider signs these parameters.
    const res = await app.inject({
      method: 'POST',
      url: '/api/webhooks/sms/status',
      headers: {
        ...signed.headers,
        'x-twilio-signature': twilioSignature(fake.authToken, PUBLIC_URL, params),
      },
      payload: new URLSearchParams(params).toString(),
    })
    expect(res.statusCode, res.body).toBe(204)
  })

  it('refuses a report without the provider’s signature, with the one error body', async () => {
    const { messageId, sid } = await fallbackSms()
    const signed = fake.statusCallback(sid, 'delivered')
    const refused = [
      // Signed with another token.
      await deliver(fake.statusCallback(sid, 'delivered', { authToken: 'not-the-token' })),
      // Signed for the URL the request reached, not the public one.
      await deliver(
        fake.statusCallback(sid, 'delivered', { url: 'http://localhost/api/webhooks/sms/status' }),
      ),
      // The body changed after signing.
      await app.inject({
        method: 'POST',
        url: '/api/webhooks/sms/status',
        headers: signed.headers,
        payload: signed.body.replace('delivered', 'failed'),
      }),
      // No signature at all.
      await app.inject({
        method: 'POST',
        url: '/api/webhooks/sms/status',
        headers: { 'content-type': signed.headers['content-type'] },
        payload: signed.body,
      }),
      // Not a form.
      await app.inject({
        method: 'POST',
        url: '/api/webhooks/sms/status',
        headers: { 'x-twilio-signature': signed.headers['x-twilio-signature'] },
        payload: signed.params,
      }),
    ]
    for (const res of refused) expectError(res, 401, 'WEBHOOK_SIGNATURE_INVALID')
    expect((await findFallback(client.sql, messageId))?.providerStatus).toBe('queued')
  })

  it('is not served without the auth token and public URL', async () => {
    const bare = await buildTestApp(world)
    try {
      const res = await bare.inject({ method: 'POST', url: '/api/webhooks/sms/status', payload: {} })
      expect(res.statusCode).toBe(404)
    } finally {
      await bare.close()
    }
  })
})
