import {
  applyPlatformStatusTo,
  applySmsStatus,
  beginFallbackCall,
  createDb,
  decideFallback,
  findFallback,
  markAbandonedCalls,
  recordFallbackFailed,
  recordFallbackSent,
} from '@dispatch/db'
import { messageIdAt } from '@dispatch/runtime'
import { createTestDatabase, waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { insertSenderKey } from './world.ts'

/**
 * The channel fallback's record against Postgres: at most one decision per message, none once it is
 * delivered, one caller of the provider, and what a killed caller leaves (docs/fallback.md).
 */
let database: Awaited<ReturnType<typeof createTestDatabase>>
let client: ReturnType<typeof createDb>
let apiKeyId: string

beforeAll(async () => {
  database = await createTestDatabase()
  client = createDb(database.url, { max: 4 })
  apiKeyId = (await insertSenderKey(client.db)).id
})
afterAll(async () => {
  await client?.close()
  await database?.drop()
})

let offset = 0
/** A message recorded in `status`, as the worker's recorder leaves it. */
async function message(status: string) {
  const acceptedAt = new Date(Date.now() - 60_000 + offset++)
  const id = messageIdAt(acceptedAt.getTime())
  await database.sql`
    insert into messages (id, api_key_id, type, phone, payload, status, accepted_at)
    values (${id}, ${apiKeyId}, 'text', '+4915112345678', ${database.sql.json({ text: 'hi' })},
      ${status}, ${acceptedAt.toISOString()})`
  return { messageId: id, acceptedAt }
}

const decide = (m: { messageId: string; acceptedAt: Date }, fromStatuses = ['failed']) =>
  decideFallback(client.sql, {
    ...m,
    reason: 'whatsapp_undeliverable',
    reasonCode: '131026',
    fromStatuses,
    at: new Date(),
  })
const begin = (m: { messageId: string; acceptedAt: Date }) =>
  beginFallbackCall(client.sql, { ...m, at: new Date() })

describe('deciding a fallback', () => {
  it('is taken once per message', async () => {
    const m = await message('failed')
    expect(await decide(m)).toBe('decided')
    expect(await decide(m)).toBe('taken')
    expect(await findFallback(client.sql, m.messageId)).toMatchObject({
      state: 'decided',
      reason: 'whatsapp_undeliverable',
      reasonCode: '131026',
      apiKeyId,
    })
  })

  it('is refused for a message delivered, read or canceled, whatever the rule allows', async () => {
    for (const status of ['delivered', 'read', 'canceled']) {
      const m = await message(status)
      expect(await decide(m, ['sent', 'failed', status])).toBe('refused')
      expect(await findFallback(client.sql, m.messageId)).toBeUndefined()
    }
  })

  it('waits for a delivered status being written, then refuses', async () => {
    const m = await message('sent')
    let decision: Promise<string> | undefined
    await database.sql.begin(async (tx) => {
      await tx`update messages set status = 'delivered' where id = ${m.messageId}`
      decision = decide(m, ['sent'])
      // The decision waits on the message's row until the status commits.
      await waitFor(
        async () =>
          (
            await database.sql`select 1 from pg_stat_activity
              where wait_event_type = 'Lock' and query like '%insert into message_fallbacks%'`
          ).length > 0,
        { what: 'the decision to wait on the row lock' },
      )
    })
    expect(await decision).toBe('refused')
  })

  it('taken first, lets a late delivered through: the record says both', async () => {
    const m = await message('sent')
    expect(await decide(m, ['sent'])).toBe('decided')
    expect(await begin(m)).toBe('calling')
    expect(
      await recordFallbackSent(client.sql, {
        messageId: m.messageId,
        provider: 'twilio',
        providerMessageId: `SM${m.messageId.replaceAll('-', '')}`,
        providerStatus: 'queued',
        at: new Date(),
      }),
    ).toBe(true)
    await database.sql`update messages set status = 'delivered', delivered_at = now() where id = ${m.messageId}`
    const [row] = await database.sql`select status, delivered_at from messages where id = ${m.messageId}`
    expect(row?.status).toBe('delivered')
    expect(await findFallback(client.sql, m.messageId)).toMatchObject({
      state: 'sent',
      providerStatus: 'queued',
    })
  })
})

describe("WhatsApp's delivered after the message failed", () => {
  /** A `failed` message WhatsApp took (its platform id), as a 131026 status leaves it. */
  async function failedOnWhatsApp() {
    const m = await message('failed')
    const platformMessageId = `wamid.${m.messageId.replaceAll('-', '')}`
    await database.sql`update messages set platform_message_id = ${platformMessageId}, last_error_code = '131026',
      failed_at = now() where id = ${m.messageId}`
    const report = (status: 'delivered' | 'read', at: Date) =>
      applyPlatformStatusTo(client.db, { platformMessageId, messageId: m.messageId, status, at })
    return { ...m, report }
  }
  const recorded = async (id: string) =>
    (await database.sql`select status, delivered_at, read_at from messages where id = ${id}`)[0]

  it('is recorded beside failed, once, the first report kept, and moves nothing', async () => {
    const m = await failedOnWhatsApp()
    const first = new Date(Date.now() - 5_000)
    expect(await m.report('delivered', first)).toBeUndefined()
    expect(await m.report('delivered', new Date())).toBeUndefined()
    const row = await recorded(m.messageId)
    expect(row?.status).toBe('failed')
    expect(new Date(row?.delivered_at).toISOString()).toBe(first.toISOString())
    expect(row?.read_at).toBeNull()
    const read = new Date()
    await m.report('read', read)
    expect(new Date((await recorded(m.messageId))?.read_at).toISOString()).toBe(read.toISOString())
    expect((await recorded(m.messageId))?.status).toBe('failed')
  })

  it('keeps a fallback from being decided, and withdraws one decided but not called', async () => {
    const before = await failedOnWhatsApp()
    await before.report('delivered', new Date())
    expect(await decide(before)).toBe('refused')
    const between = await failedOnWhatsApp()
    expect(await decide(between)).toBe('decided')
    await between.report('delivered', new Date())
    expect(await begin(between)).toBe('withdrawn')
  })
})

describe('calling the provider', () => {
  it('is one caller at most, however many try at once', async () => {
    const m = await message('failed')
    await decide(m)
    const results = await Promise.all([begin(m), begin(m), begin(m)])
    expect(results.filter((r) => r === 'calling')).toHaveLength(1)
    expect(results.filter((r) => r === 'none')).toHaveLength(2)
  })

  it('is withdrawn when WhatsApp delivered between the decision and the call', async () => {
    const m = await message('sent')
    await decide(m, ['sent'])
    await database.sql`update messages set status = 'delivered' where id = ${m.messageId}`
    expect(await begin(m)).toBe('withdrawn')
    expect(await begin(m)).toBe('none')
    expect(await findFallback(client.sql, m.messageId)).toMatchObject({ state: 'withdrawn', callingAt: null })
  })

  it('killed after `calling`: never called again, recorded unknown by the sweep', async () => {
    const m = await message('failed')
    await decide(m)
    expect(await begin(m)).toBe('calling')
    // The process dies here. Whoever runs the step again finds nothing to call.
    expect(await begin(m)).toBe('none')
    expect(await markAbandonedCalls(client.sql, new Date(Date.now() - 60_000), new Date())).not.toContain(
      m.messageId,
    )
    expect(await markAbandonedCalls(client.sql, new Date(Date.now() + 1000), new Date())).toContain(
      m.messageId,
    )
    expect(await findFallback(client.sql, m.messageId)).toMatchObject({
      state: 'unknown',
      errorCode: 'CALL_INTERRUPTED',
    })
    // A slow caller answering after the sweep cannot rewrite what was recorded.
    expect(
      await recordFallbackSent(client.sql, {
        messageId: m.messageId,
        provider: 'twilio',
        providerMessageId: 'SMlate',
        providerStatus: 'queued',
        at: new Date(),
      }),
    ).toBe(false)
  })

  it('records a refusal as failed and a lost answer as unknown', async () => {
    const refused = await message('failed')
    const lost = await message('failed')
    for (const [m, outcomeKnown] of [
      [refused, true],
      [lost, false],
    ] as const) {
      await decide(m)
      await begin(m)
      await recordFallbackFailed(client.sql, {
        messageId: m.messageId,
        provider: 'twilio',
        code: outcomeKnown ? '21211' : 'TIMEOUT',
        message: 'x',
        outcomeKnown,
        at: new Date(),
      })
    }
    expect((await findFallback(client.sql, refused.messageId))?.state).toBe('failed')
    expect((await findFallback(client.sql, lost.messageId))?.state).toBe('unknown')
  })
})

describe('SMS status callbacks', () => {
  it('move the SMS forward only; a duplicate or a late one changes nothing', async () => {
    const m = await message('failed')
    const sid = `SM${m.messageId.replaceAll('-', '')}`
    await decide(m)
    await begin(m)
    await recordFallbackSent(client.sql, {
      messageId: m.messageId,
      provider: 'twilio',
      providerMessageId: sid,
      providerStatus: 'queued',
      at: new Date(),
    })
    const status = (s: string, errorCode?: string) =>
      applySmsStatus(client.sql, { providerMessageId: sid, status: s, errorCode, at: new Date() })
    expect(await status('sent')).toBe(m.messageId)
    expect(await status('delivered')).toBe(m.messageId)
    expect(await status('delivered')).toBeUndefined()
    expect(await status('sent')).toBeUndefined()
    expect(await status('undelivered', '30003')).toBeUndefined()
    expect(await findFallback(client.sql, m.messageId)).toMatchObject({
      state: 'sent',
      providerStatus: 'delivered',
      errorCode: null,
    })
    expect(
      await applySmsStatus(client.sql, { providerMessageId: 'SMnone', status: 'sent', at: new Date() }),
    ).toBe(undefined)
  })
})
