import { setTimeout as sleep } from 'node:timers/promises'
import { startSmtpServer, type TestSmtpServer, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  buildTestApp,
  createWorld,
  expectError,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { orderBody, placeOrder, postOrder, seedTenant, serials } from './fixtures.ts'

const BME = 'bme@lab.test'
const POLL_MS = 100

let world: TestWorld
let app: TestApp
let smtp: TestSmtpServer
let worker: RunningWorker
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { BME_EMAIL: BME })
  smtp = await startSmtpServer()
  worker = await startTestWorker(world, { SMTP_URL: smtp.url, OUTBOX_POLL_MS: String(POLL_MS) })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await smtp?.close()
  await world?.close()
})

const mailsAbout = (address: string, displayId: string) =>
  smtp.messagesTo(address).filter((m) => m.subject?.includes(displayId))
const deliveredFor = async (orderId: string) =>
  (
    await world.sql`select d.status from email_deliveries d join outbox o on o.id = d.outbox_id
      where o.payload->'data'->>'orderId' = ${orderId}`
  ).map((r) => r.status)
const outboxFor = async (orderId: string) =>
  Number(
    (await world.sql`select count(*) from outbox where payload->'data'->>'orderId' = ${orderId}`)[0]?.count,
  )

describe('order.created e-mails', () => {
  it('with both flags: the partner e-mail to the project address, and the BME e-mail', async () => {
    const t = await seedTenant(app, 'both', { channel: { sendPartnerEmail: true, sendBMEEmail: true } })
    const [serial] = serials(1, 'MAIL')
    const order = await placeOrder(app, t, {
      order: { partnerName: 'Lab <North>' },
      orderItems: [{ productId: t.kit.id, price: 2500, quantity: 1, kitSerials: [serial] }],
    })
    const partner = await waitFor(() => mailsAbout('partner@both.test', order.displayId)[0], {
      what: 'partner e-mail',
    })
    expect(partner.subject).toContain(order.displayId)
    expect(partner.text).toContain(serial)
    expect(partner.text).toContain('Total: 2500')
    const bme = await waitFor(() => mailsAbout(BME, order.displayId)[0], { what: 'BME e-mail' })
    expect(bme.text).toContain('both')
    expect(bme.html).toContain('Lab &lt;North&gt;')
    await waitFor(async () => (await deliveredFor(order.id)).filter((s) => s === 'sent').length === 2, {
      what: 'both deliveries recorded',
    })
    await sleep(POLL_MS * 5)
    expect(mailsAbout('partner@both.test', order.displayId)).toHaveLength(1)
    expect(mailsAbout(BME, order.displayId)).toHaveLength(1)
  })

  it('with only sendPartnerEmail: the partner e-mail alone', async () => {
    const t = await seedTenant(app, 'partner-only', { channel: { sendPartnerEmail: true } })
    const order = await placeOrder(app, t)
    await waitFor(() => mailsAbout('partner@partner-only.test', order.displayId)[0], {
      what: 'partner e-mail',
    })
    await sleep(POLL_MS * 5)
    expect(mailsAbout(BME, order.displayId)).toHaveLength(0)
    expect(await outboxFor(order.id)).toBe(1)
  })

  it('with only sendBMEEmail: the BME e-mail alone', async () => {
    const t = await seedTenant(app, 'bme-only', { channel: { sendBMEEmail: true } })
    const order = await placeOrder(app, t)
    await waitFor(() => mailsAbout(BME, order.displayId)[0], { what: 'BME e-mail' })
    await sleep(POLL_MS * 5)
    expect(mailsAbout('partner@bme-only.test', order.displayId)).toHaveLength(0)
  })

  it('with neither flag, for a project without an address, or for a refused order: none', async () => {
    const quiet = await seedTenant(app, 'quiet')
    const quietOrder = await placeOrder(app, quiet)
    const noAddress = await seedTenant(app, 'no-address', {
      channel: { sendPartnerEmail: true },
      project: { externalEmail: null },
    })
    const noAddressOrder = await placeOrder(app, noAddress)
    const loud = await seedTenant(app, 'loud', { channel: { sendPartnerEmail: true, sendBMEEmail: true } })
    const refused = await postOrder(
      app,
      loud.key,
      orderBody(loud, { orderItems: [{ productId: loud.kit.id, price: 1, quantity: 500, kitSerials: [] }] }),
    )
    expectError(refused, 409, 'OUT_OF_STOCK')
    await sleep(POLL_MS * 8)
    expect(await outboxFor(quietOrder.id)).toBe(0)
    expect(await outboxFor(noAddressOrder.id)).toBe(0)
    expect(smtp.messagesTo('partner@quiet.test')).toHaveLength(0)
    expect(smtp.messagesTo('partner@loud.test')).toHaveLength(0)
    expect(smtp.messages.filter((m) => m.text?.includes('tenant loud'))).toHaveLength(0)
  })
})
