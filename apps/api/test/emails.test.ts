import { setTimeout as sleep } from 'node:timers/promises'
import { startSmtpServer, type TestSmtpServer, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  decide,
  expectError,
  requestKey,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from './helpers.ts'

type Mail = TestSmtpServer['messages'][number]

const POLL_MS = 100

let world: TestWorld
let app: TestApp
let smtp: TestSmtpServer
let worker: RunningWorker
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  smtp = await startSmtpServer()
  worker = await startTestWorker(world, {
    SMTP_URL: smtp.url,
    OUTBOX_POLL_MS: String(POLL_MS),
  })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await smtp?.close()
  await world?.close()
})

const mailsTo = (address: string) => smtp.messagesTo(address)
/** Waits for the `count`-th e-mail to `address` and returns it. */
const nthMailTo = (address: string, count = 1) =>
  waitFor(() => mailsTo(address)[count - 1], { what: `e-mail #${count} to ${address}` })
/** Everything a reader of the e-mail could see: headers, subject and both parts. */
const wholeMail = (mail: Mail) => JSON.stringify([mail.headerLines, mail.subject, mail.text, mail.html])

const outboxRowsFor = (keyId: string) =>
  world.sql<{ id: string; dispatched_at: Date | null }[]>`
    select id, dispatched_at from outbox where payload->'data'->>'keyId' = ${keyId} order by id`

const deliveryFor = async (keyId: string) => {
  const [row] = await world.sql<
    {
      status: string
      attempts: number
      recipient: string
      subject: string
      last_error: string | null
      provider_message_id: string | null
      sent_at: Date | null
    }[]
  >`
    select d.* from email_deliveries d join outbox o on o.id = d.outbox_id
    where o.payload->'data'->>'keyId' = ${keyId}`
  return row
}

describe('e-mails sent for admin decisions', () => {
  it('approve: one e-mail to the requester, naming the client and the key prefix, never the key', async () => {
    const email = 'approve@acme.test'
    const key = await requestKey(app, { email, clientName: 'Acme Billing' })
    expect((await decide(app, key.id, 'approve')).statusCode).toBe(200)

    const mail = await nthMailTo(email)
    expect(mail.subject).toMatch(/approved/i)
    expect(mail.subject).toContain('Acme Billing')
    expect(typeof mail.text).toBe('string')
    expect(typeof mail.html).toBe('string')
    const [row] = await world.sql`select key_prefix from api_keys where id = ${key.id}`
    const prefix = row?.key_prefix as string
    expect(key.key.startsWith(prefix)).toBe(true)
    expect(mail.text).toContain(prefix)
    expect(mail.html).toContain(prefix)
    expect(wholeMail(mail)).not.toContain(key.key)
    expect(wholeMail(mail)).not.toContain(key.key.slice(prefix.length)) // not even the secret part

    // Once delivered, nothing more comes for it, however many relay passes follow.
    await waitFor(async () => (await deliveryFor(key.id))?.status === 'sent', { what: 'delivery' })
    await sleep(POLL_MS * 5)
    expect(mailsTo(email)).toHaveLength(1)
  })

  it('records the delivery: sent, one attempt, the message id the server received', async () => {
    const email = 'record@acme.test'
    const key = await activeKey(app, { email })
    const mail = await nthMailTo(email)
    const delivery = await waitFor(async () => {
      const row = await deliveryFor(key.id)
      return row?.status === 'sent' && row
    })
    expect(delivery).toMatchObject({
      status: 'sent',
      attempts: 1,
      recipient: email,
      subject: mail.subject,
      last_error: null,
    })
    expect(delivery.provider_message_id).toBeTruthy()
    expect(delivery.provider_message_id).toBe(mail.messageId)
    expect(delivery.sent_at).toBeInstanceOf(Date)
  })

  it('reject: an e-mail to the requester giving the reason', async () => {
    const email = 'reject@acme.test'
    const key = await requestKey(app, { email, clientName: 'Acme Gmail' })
    const res = await decide(app, key.id, 'reject', { reason: 'Use your company domain' })
    expect(res.statusCode).toBe(200)

    const mail = await nthMailTo(email)
    expect(mail.subject).toMatch(/rejected/i)
    expect(mail.subject).toContain('Acme Gmail')
    expect(mail.text).toContain('Use your company domain')
    expect(mail.html).toContain('Use your company domain')
    expect(wholeMail(mail)).not.toContain(key.key)
  })

  it('revoke: after the approval e-mail, a revocation e-mail giving the reason', async () => {
    const email = 'revoke@acme.test'
    const key = await activeKey(app, { email, clientName: 'Acme Legacy' })
    const approval = await nthMailTo(email, 1)
    expect(approval.subject).toMatch(/approved/i)

    const res = await decide(app, key.id, 'revoke', { reason: 'Key leaked in a public repository' })
    expect(res.statusCode).toBe(200)
    const mail = await nthMailTo(email, 2)
    expect(mail.subject).toMatch(/revoked/i)
    expect(mail.subject).toContain('Acme Legacy')
    expect(mail.text).toContain('Key leaked in a public repository')
    expect(wholeMail(mail)).not.toContain(key.key)
  })

  it('escapes the client name in the HTML part', async () => {
    const email = 'escape@acme.test'
    await activeKey(app, { email, clientName: 'Evil <script>alert("x")</script> & Co' })
    const mail = await nthMailTo(email)
    const html = mail.html as string
    expect(html).toContain('Evil &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co')
    expect(html).not.toContain('<script')
    // The plain-text part is plain text: the name as given.
    expect(mail.text).toContain('Evil <script>alert("x")</script> & Co')
  })

  it('sends nothing for a decision that is refused', async () => {
    const email = 'refused@acme.test'
    const key = await activeKey(app, { email })
    await nthMailTo(email)
    await waitFor(async () => (await deliveryFor(key.id))?.status === 'sent', { what: 'approval delivery' })

    expectError(
      await decide(app, key.id, 'reject', { reason: 'Too late' }),
      409,
      'INVALID_STATE_TRANSITION',
      /Cannot reject an API key that is approved/,
    )
    // Several relay passes later: still only the approval, in the outbox and in the mailbox.
    await sleep(POLL_MS * 8)
    const rows = await outboxRowsFor(key.id)
    expect(rows).toHaveLength(1)
    expect(rows[0]?.dispatched_at).toBeInstanceOf(Date)
    expect(mailsTo(email)).toHaveLength(1)
    expect(mailsTo(email)[0]?.subject).toMatch(/approved/i)
  })
})
