import type { MessageView, SenderView } from '@dispatch/contracts'
import {
  type CloudApiRequest,
  captureLogs,
  type FakeWhatsApp,
  graphError,
  startFakeWhatsApp,
  startSmtpServer,
  type TestSmtpServer,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const DEFAULT_NUMBER = '100000000000777'
const DEFAULT_TOKEN = 'EAAG-default-sender-token-0001'
const SECOND_NUMBER = '200000000000888'
const SECOND_TOKEN = 'EAAG-second-sender-token-0002'
const FIXED_TOKEN = 'EAAG-second-sender-fixed-token-0003'
const ADMINS = 'oncall@dispatch.test'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let smtp: TestSmtpServer
let worker: RunningWorker
const workerLogs = captureLogs()
let keyA: { id: string; key: string }
let keyB: { id: string; key: string }
let second: SenderView

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  smtp = await startSmtpServer()
  fake.number(DEFAULT_NUMBER, { token: DEFAULT_TOKEN })
  fake.number(SECOND_NUMBER, { token: SECOND_TOKEN })
  app = await buildTestApp(world, { LOG_LEVEL: 'trace', MESSAGE_RATE_PER_SECOND: '10000' })
  worker = await startTestWorker(
    world,
    {
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: DEFAULT_TOKEN,
      WHATSAPP_PHONE_NUMBER_ID: DEFAULT_NUMBER,
      SMTP_URL: smtp.url,
      ADMIN_ALERT_EMAIL: ADMINS,
      MESSAGES_BACKOFF_MS: '20',
      ADMISSION_INTERVAL_MS: '20',
      LOG_LEVEL: 'trace',
    },
    workerLogs.stream,
  )
  keyA = await activeKey(app, { scopes: SEND_SCOPES })
  keyB = await activeKey(app, { scopes: SEND_SCOPES })
  const created = await app.inject({
    method: 'POST',
    url: '/api/admin/senders',
    headers: asAdmin(),
    payload: { phoneNumberId: SECOND_NUMBER, displayName: 'Acme support line', accessToken: SECOND_TOKEN },
  })
  expect(created.statusCode, created.body).toBe(201)
  second = created.json<SenderView>()
  const bound = await app.inject({
    method: 'PATCH',
    url: `/api/admin/api-keys/${keyB.id}`,
    headers: asAdmin(),
    payload: { senderId: second.id },
  })
  expect(bound.statusCode, bound.body).toBe(200)
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await smtp?.close()
  await world?.close()
})

async function sendText(key: { key: string }, text = 'hello') {
  const res = await send(app, 'send-text', key.key, { phone: '+5511987654321', text })
  expect(res.statusCode, res.body).toBe(202)
  return res.json<{ messageId: string }>().messageId
}

const sentIds = (requests: CloudApiRequest[]) => new Set(requests.map((r) => r.messageId))
const allSent = (ids: string[], number: string, what: string) =>
  waitFor(() => ids.every((id) => sentIds(fake.sentFrom(number)).has(id)) || undefined, {
    what,
    timeoutMs: 15_000,
  })
const status = async (key: { key: string }, id: string) => {
  const res = await app.inject({
    method: 'GET',
    url: `/api/third-party/messages/${id}`,
    headers: { 'x-api-key': key.key },
  })
  return res.json<MessageView>()
}
const senderNow = async () =>
  (
    await app.inject({ method: 'GET', url: `/api/admin/senders/${second.id}`, headers: asAdmin() })
  ).json<SenderView>()

describe('two senders', () => {
  it("sends each key's messages through its own number, with that number's token, and says which", async () => {
    const fromA = [await sendText(keyA), await sendText(keyA)]
    const fromB = [await sendText(keyB), await sendText(keyB)]
    await allSent(fromA, DEFAULT_NUMBER, "key A's messages from the default number")
    await allSent(fromB, SECOND_NUMBER, "key B's messages from the second number")
    expect(
      fake.sentFrom(DEFAULT_NUMBER).every((r) => r.headers.authorization === `Bearer ${DEFAULT_TOKEN}`),
    ).toBe(true)
    expect(
      fake.sentFrom(SECOND_NUMBER).every((r) => r.headers.authorization === `Bearer ${SECOND_TOKEN}`),
    ).toBe(true)
    expect(fromB.some((id) => sentIds(fake.sentFrom(DEFAULT_NUMBER)).has(id))).toBe(false)

    const viewB = await waitFor(async () => {
      const view = await status(keyB, fromB[0] as string)
      return view.status === 'sent' ? view : undefined
    })
    expect(viewB).toMatchObject({ senderId: second.id, senderPhoneNumberId: SECOND_NUMBER })
    expect(await status(keyA, fromA[0] as string)).toMatchObject({
      senderId: 'default',
      senderPhoneNumberId: DEFAULT_NUMBER,
    })
  })

  it('a 130429 loop on one number slows only that sender: the other goes on, nothing fails or spends an attempt', async () => {
    fake.number(SECOND_NUMBER, { answer: graphError(130429, '(#130429) Rate limit hit') })
    try {
      const stuck = [await sendText(keyB), await sendText(keyB), await sendText(keyB)]
      const flowing = await Promise.all(Array.from({ length: 30 }, () => sendText(keyA)))
      await allSent(flowing, DEFAULT_NUMBER, "key A's 30 messages while key B's number is rate limited")
      expect(fake.requests.filter((r) => stuck.includes(r.messageId ?? '')).length).toBeGreaterThan(0)
      for (const id of stuck) {
        const view = await status(keyB, id)
        expect(view.status).not.toBe('failed')
        expect(view.attempts).toBe(0)
      }
      fake.number(SECOND_NUMBER, { answer: undefined })
      await allSent(stuck, SECOND_NUMBER, "key B's messages once its number is no longer limited")
    } finally {
      fake.number(SECOND_NUMBER, { answer: undefined })
    }
  })

  it('code 190 on one number pauses that sender, alerts the admins, leaves the other alone, and resumes once the token is fixed', async () => {
    // Meta expired the token: the number takes only a new one.
    fake.number(SECOND_NUMBER, { token: FIXED_TOKEN })
    const waiting = await sendText(keyB, 'waits for a good token')
    const attention = await waitFor(async () => {
      const sender = await senderNow()
      return sender.state === 'needs_attention' ? sender : undefined
    })
    expect(attention.stateReason).toMatch(/^190/)
    const mail = await waitFor(
      () => smtp.messagesTo(ADMINS).find((m) => /needs attention/.test(m.subject ?? '')),
      {
        what: 'the admins alert e-mail',
      },
    )
    expect(mail.text).toContain(SECOND_NUMBER)

    // The other sender is not affected.
    const other = await sendText(keyA)
    await allSent([other], DEFAULT_NUMBER, "key A's message while key B's sender needs attention")
    // Paused, not failed: the message waits within its validity.
    await new Promise((resolve) => setTimeout(resolve, 300))
    const tries = fake.requests.filter((r) => r.messageId === waiting).length
    expect(tries).toBe(1)
    expect((await status(keyB, waiting)).status).not.toBe('failed')

    const fixed = await app.inject({
      method: 'PATCH',
      url: `/api/admin/senders/${second.id}`,
      headers: asAdmin(),
      payload: { accessToken: FIXED_TOKEN },
    })
    expect(fixed.statusCode, fixed.body).toBe(200)
    expect(fixed.json<SenderView>()).toMatchObject({
      state: 'active',
      accessTokenLast4: FIXED_TOKEN.slice(-4),
    })
    await allSent([waiting], SECOND_NUMBER, 'the waiting message once the token is fixed')
    const sent = fake.sentFrom(SECOND_NUMBER).find((r) => r.messageId === waiting)
    expect(sent?.headers.authorization).toBe(`Bearer ${FIXED_TOKEN}`)
  })

  it('never writes a sender token to a log line, and stores it sealed', async () => {
    const [row] = await world.sql`select access_token_ciphertext from senders where id = ${second.id}`
    expect(row?.access_token_ciphertext).toMatch(/^v1\./)
    for (const token of [SECOND_TOKEN, FIXED_TOKEN, DEFAULT_TOKEN]) {
      expect(row?.access_token_ciphertext).not.toContain(token)
      expect(workerLogs.text()).not.toContain(token)
      expect(app.logs.text()).not.toContain(token)
    }
    // The trace-level logs did see the senders at work.
    expect(workerLogs.text()).toContain(second.id)
  })
})
