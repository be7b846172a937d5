import { setTimeout as sleep } from 'node:timers/promises'
import { startSmtpServer, type TestSmtpServer, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from './helpers.ts'

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
    EMAIL_ATTEMPTS: '5',
  })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await smtp?.close()
  await world?.close()
})

const mailsTo = (address: string) => smtp.messagesTo(address)

interface Delivery {
  status: string
  attempts: number
  last_error: string | null
  provider_message_id: string | null
  sent_at: Date | null
}
const deliveryFor = async (keyId: string) => {
  const [row] = await world.sql<Delivery[]>`
    select d.* from email_deliveries d join outbox o on o.id = d.outbox_id
    where o.payload->'data'->>'keyId' = ${keyId}`
  return row
}
const finalDelivery = (keyId: string) =>
  waitFor(
    async () => {
      const row = await deliveryFor(keyId)
      return row && row.status !== 'retrying' && row
    },
    { what: 'a final delivery outcome' },
  )

describe('e-mail delivery failures', () => {
  it('retries a temporary refusal (451) until the e-mail gets through', async () => {
    const email = 'retry@acme.test'
    smtp.failNext(2, 451)
    const key = await activeKey(app, { email })

    const delivery = await finalDelivery(key.id)
    expect(delivery).toMatchObject({ status: 'sent', attempts: 3, last_error: null })
    expect(delivery.sent_at).toBeInstanceOf(Date)
    const mails = mailsTo(email)
    expect(mails).toHaveLength(1)
    expect(mails[0]?.subject).toMatch(/approved/i)
    expect(delivery.provider_message_id).toBe(mails[0]?.messageId)
  })

  it('gives up at once on a permanent refusal (550) and records why', async () => {
    const email = 'refused@acme.test'
    smtp.failNext(1, 550)
    const key = await activeKey(app, { email })

    const delivery = await finalDelivery(key.id)
    expect(delivery).toMatchObject({
      status: 'failed',
      attempts: 1,
      provider_message_id: null,
      sent_at: null,
    })
    expect(delivery.last_error).toMatch(/550|refuses/)
    // A retry would get through now (the server refuses only one message): none comes.
    await sleep(1000)
    expect(mailsTo(email)).toHaveLength(0)
    expect(await deliveryFor(key.id)).toMatchObject({ status: 'failed', attempts: 1 })
  })
})
