import { beginFallbackCall, createDb, decideFallback, findFallback, markAbandonedCalls } from '@dispatch/db'
import { messageIdAt } from '@dispatch/runtime'
import {
  createTestDatabase,
  DROP_AFTER_TAKING,
  type FakeSms,
  startFakeSms,
  twilioError,
  waitFor,
} from '@dispatch/testing'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AbandonedSmsCallSweeper } from '../../src/messages/sms-call-sweep.ts'
import { type SmsFallbackRequest, sendSmsFallback } from '../../src/messages/sms-fallback.ts'
import { createTwilioSmsProvider } from '../../src/platforms/sms/twilio.ts'
import { insertSenderKey } from './world.ts'

/**
 * The channel fallback's steps against Postgres and the fake SMS provider: whatever runs twice,
 * at once, or dies midway, a recipient gets the SMS at most once (docs/fallback.md).
 */
const CALLBACK = 'https://dispatch.example.com/api/webhooks/sms/status'
let database: Awaited<ReturnType<typeof createTestDatabase>>
let client: ReturnType<typeof createDb>
let fake: FakeSms
let apiKeyId: string

beforeAll(async () => {
  database = await createTestDatabase()
  client = createDb(database.url, { max: 6 })
  apiKeyId = (await insertSenderKey(client.db)).id
  fake = await startFakeSms()
})
afterAll(async () => {
  await fake?.close()
  await client?.close()
  await database?.drop()
})

const deps = () => ({
  sql: client.sql,
  sms: createTwilioSmsProvider({
    apiUrl: fake.url,
    accountSid: fake.accountSid,
    authToken: fake.authToken,
    from: '+15005550006',
    statusCallbackUrl: CALLBACK,
    timeoutMs: 2000,
  }),
  clock: () => new Date(),
  log: pino({ level: 'silent' }),
})

let phones = 0
/** A message WhatsApp failed with 131026, recorded as the worker records it, to a number of its own. */
async function undeliverable(status = 'failed'): Promise<SmsFallbackRequest> {
  const acceptedAt = new Date(Date.now() - 60_000 + phones)
  const messageId = messageIdAt(acceptedAt.getTime())
  const to = `+49151${String(1_000_000 + phones++).padStart(7, '0')}`
  await database.sql`
    insert into messages (id, api_key_id, type, phone, payload, status, accepted_at, last_error_code)
    values (${messageId}, ${apiKeyId}, 'text', ${to}, ${database.sql.json({ text: 'hi' })}, ${status},
      ${acceptedAt.toISOString()}, '131026')`
  return {
    messageId,
    acceptedAt,
    to,
    text: 'Your order has shipped',
    reason: 'whatsapp_undeliverable',
    reasonCode: '131026',
    fromStatuses: ['failed'],
  }
}

describe('the SMS fallback', () => {
  it('sends the SMS once, and records its sid; run again, it sends nothing', async () => {
    const request = await undeliverable()
    expect(await sendSmsFallback(deps(), request)).toBe('sent')
    expect(await sendSmsFallback(deps(), request)).toBe('elsewhere')
    const sent = fake.sentTo(request.to)
    expect(sent).toHaveLength(1)
    expect(sent[0]?.params).toMatchObject({ Body: 'Your order has shipped', StatusCallback: CALLBACK })
    expect(await findFallback(client.sql, request.messageId)).toMatchObject({
      state: 'sent',
      provider: 'twilio',
      providerMessageId: sent[0]?.sid,
      providerStatus: 'queued',
      reason: 'whatsapp_undeliverable',
      reasonCode: '131026',
    })
  })

  it('sends once when many runs race for the same message', async () => {
    const request = await undeliverable()
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => sendSmsFallback(deps(), request)))
    expect(outcomes.filter((o) => o === 'sent')).toHaveLength(1)
    expect(fake.sentTo(request.to)).toHaveLength(1)
  })

  it('killed between the decision and `calling`: the next run sends it, once', async () => {
    const request = await undeliverable()
    await decideFallback(client.sql, { ...request, at: new Date() })
    // The process dies here: nothing was called.
    expect(await sendSmsFallback(deps(), request)).toBe('sent')
    expect(await sendSmsFallback(deps(), request)).toBe('elsewhere')
    expect(fake.sentTo(request.to)).toHaveLength(1)
  })

  it('killed after `calling`: never sent again, recorded unknown by the sweep', async () => {
    const request = await undeliverable()
    await decideFallback(client.sql, { ...request, at: new Date() })
    expect(await beginFallbackCall(client.sql, { ...request, at: new Date() })).toBe('calling')
    // The process dies here, its call made or not. Every later run leaves it alone.
    expect(await sendSmsFallback(deps(), request)).toBe('elsewhere')
    expect(fake.sentTo(request.to)).toHaveLength(0)
    await markAbandonedCalls(client.sql, new Date(Date.now() + 1000), new Date())
    expect((await findFallback(client.sql, request.messageId))?.state).toBe('unknown')
    expect(await sendSmsFallback(deps(), request)).toBe('elsewhere')
    expect(fake.sentTo(request.to)).toHaveLength(0)
  })

  it('records a lost answer as unknown and never sends again, though the provider took it', async () => {
    const request = await undeliverable()
    fake.script(DROP_AFTER_TAKING)
    expect(await sendSmsFallback(deps(), request)).toBe('unknown')
    expect(await sendSmsFallback(deps(), request)).toBe('elsewhere')
    expect(fake.sentTo(request.to)).toHaveLength(1)
  })

  it('records a refusal as failed, with the provider’s code', async () => {
    const request = await undeliverable()
    fake.script(twilioError(21211, "The 'To' number is not a valid phone number."))
    expect(await sendSmsFallback(deps(), request)).toBe('failed')
    expect(await findFallback(client.sql, request.messageId)).toMatchObject({
      state: 'failed',
      errorCode: '21211',
    })
    expect(await sendSmsFallback(deps(), request)).toBe('elsewhere')
    expect(fake.sentTo(request.to)).toHaveLength(0)
  })

  it('tries a 429 again, within the same call, and sends once when the provider takes it', async () => {
    const request = await undeliverable()
    const tooMany = twilioError(20429, 'Too Many Requests', 429)
    fake.script(tooMany, tooMany)
    const quick = { ...deps(), retry: { attempts: 4, baseMs: 10, maxWaitMs: 30, withinMs: 5_000 } }
    expect(await sendSmsFallback(quick, request)).toBe('sent')
    expect(fake.requests.filter((r) => r.params.To === request.to)).toHaveLength(3)
    expect(fake.sentTo(request.to)).toHaveLength(1)
    expect(await findFallback(client.sql, request.messageId)).toMatchObject({
      state: 'sent',
      errorCode: null,
    })
    expect(await sendSmsFallback(quick, request)).toBe('elsewhere')
    expect(fake.sentTo(request.to)).toHaveLength(1)
  })

  it('gives up on a 429 after its bounded tries (failed, never sent), and never retries a 5xx', async () => {
    const limited = await undeliverable()
    const tooMany = twilioError(20429, 'Too Many Requests', 429)
    fake.script(tooMany, tooMany, tooMany)
    const quick = { ...deps(), retry: { attempts: 3, baseMs: 10, maxWaitMs: 30, withinMs: 5_000 } }
    expect(await sendSmsFallback(quick, limited)).toBe('failed')
    expect(fake.requests.filter((r) => r.params.To === limited.to)).toHaveLength(3)
    expect(await findFallback(client.sql, limited.messageId)).toMatchObject({
      state: 'failed',
      errorCode: '20429',
    })
    expect(await sendSmsFallback(quick, limited)).toBe('elsewhere')
    expect(fake.sentTo(limited.to)).toHaveLength(0)

    // A 5xx may hide an SMS the provider created: unknown at once, one request only.
    const broken = await undeliverable()
    fake.script(twilioError(20500, 'Internal Server Error', 503))
    expect(await sendSmsFallback(quick, broken)).toBe('unknown')
    expect(fake.requests.filter((r) => r.params.To === broken.to)).toHaveLength(1)
  })

  it('sends nothing for a message delivered meanwhile, or canceled', async () => {
    const delivered = await undeliverable('delivered')
    const canceled = await undeliverable('canceled')
    expect(await sendSmsFallback(deps(), { ...delivered, fromStatuses: ['sent', 'delivered'] })).toBe(
      'refused',
    )
    expect(await sendSmsFallback(deps(), canceled)).toBe('refused')
    expect(fake.sentTo(delivered.to)).toHaveLength(0)
    expect(fake.sentTo(canceled.to)).toHaveLength(0)
  })

  it('races a late delivered: the SMS goes or the delivered wins, never both unrecorded', async () => {
    // A `sent` message, under the rule "no delivered in N seconds", while its delivered is written.
    const request = {
      ...(await undeliverable('sent')),
      fromStatuses: ['sent'],
      reason: 'not_delivered_in_time' as const,
    }
    let outcome: Promise<string> | undefined
    await database.sql.begin(async (tx) => {
      await tx`update messages set status = 'delivered', delivered_at = now() where id = ${request.messageId}`
      outcome = sendSmsFallback(deps(), request)
      await waitFor(
        async () =>
          (
            await database.sql`select 1 from pg_stat_activity
              where wait_event_type = 'Lock' and query like '%insert into message_fallbacks%'`
          ).length > 0,
        { what: 'the fallback to wait on the message row' },
      )
    })
    expect(await outcome).toBe('refused')
    expect(fake.sentTo(request.to)).toHaveLength(0)
  })

  it('without a provider, records the fallback failed and sends nothing', async () => {
    const request = await undeliverable()
    expect(await sendSmsFallback({ ...deps(), sms: undefined }, request)).toBe('failed')
    expect(await findFallback(client.sql, request.messageId)).toMatchObject({
      state: 'failed',
      errorCode: 'SMS_NOT_CONFIGURED',
    })
  })

  it('the sweep records `unknown` only a call older than the provider timeout and a margin', async () => {
    const request = await undeliverable()
    await decideFallback(client.sql, { ...request, at: new Date() })
    await beginFallbackCall(client.sql, { ...request, at: new Date() })
    const sweeper = new AbandonedSmsCallSweeper(
      client.sql,
      { smsTimeoutMs: 10_000 },
      pino({ level: 'silent' }),
    )
    expect(await sweeper.sweep()).not.toContain(request.messageId)
    expect((await findFallback(client.sql, request.messageId))?.state).toBe('calling')
    expect(await sweeper.sweep(new Date(Date.now() + 71_000))).toContain(request.messageId)
    expect(await findFallback(client.sql, request.messageId)).toMatchObject({
      state: 'unknown',
      errorCode: 'CALL_INTERRUPTED',
    })
    expect(await sendSmsFallback(deps(), request)).toBe('elsewhere')
    expect(fake.sentTo(request.to)).toHaveLength(0)
  })
})
