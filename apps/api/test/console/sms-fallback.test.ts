import type { MessageView } from '@dispatch/contracts'
import {
  type FakeSms,
  type FakeWhatsApp,
  graphError,
  startFakeSms,
  startFakeWhatsApp,
  twilioError,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  buildTestApp,
  createWorld,
  messageView,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'
import { browserBinary, checkPage, launchBrowser, openPage, poll } from './browser.ts'

/**
 * The channel fallback as a person sees it (docs/fallback.md, docs/console.md), in real Chromium:
 * a text WhatsApp refuses with 131026 goes out as an SMS through the fake provider, which reports
 * it delivered and priced; another's SMS the provider refuses; a third goes by WhatsApp. The
 * console's list names each one's channel and searches by it, and the message pages (console and
 * portal) say the channel, what became of the fallback, why and when it was decided.
 */

const NUMBER = '100000000000426'
const PUBLIC_URL = 'https://dispatch.example.com/api/webhooks/sms/status'
const SMS_PHONE = '+4915112400001'
const REFUSED_PHONE = '+4915112400002'
const WHATSAPP_PHONE = '+4915112400003'
const fallback = { sms: { text: 'Your parcel is on its way: example.com/t/9' } }
if (browserBinary.missing)
  console.warn(`sms fallback: the browser tests are skipped: ${browserBinary.missing}`)

let world: TestWorld
let app: TestApp
let whatsapp: FakeWhatsApp
let sms: FakeSms
let worker: RunningWorker
let browser: Browser
let baseUrl: string
let page: Page
let complaints: string[]
let key: { key: string }
let smsMessage: MessageView
let refusedMessage: MessageView

/** A text WhatsApp refuses with 131026, carrying a fallback: its view once the fallback is `state`. */
async function undeliverable(phone: string, state: string) {
  whatsapp.script(graphError(131026, 'Message undeliverable'))
  const res = await send(app, 'send-text', key.key, { phone, text: 'Your parcel is on its way', fallback })
  expect(res.statusCode, res.body).toBe(202)
  const { messageId } = res.json<MessageView>()
  return waitFor(
    async () => {
      const view = await messageView(app, key.key, messageId)
      return view.fallback?.state === state && view
    },
    { what: `the fallback ${state}`, timeoutMs: 15_000 },
  )
}

describe.skipIf(browserBinary.missing)('a message’s channel and SMS fallback, in a browser', () => {
  beforeAll(async () => {
    world = await createWorld()
    whatsapp = await startFakeWhatsApp()
    sms = await startFakeSms()
    const smsEnv = sms.env(PUBLIC_URL)
    app = await buildTestApp(world, { ...smsEnv, MESSAGE_RATE_PER_SECOND: '10000' })
    worker = await startTestWorker(world, {
      ...smsEnv,
      WHATSAPP_API_URL: whatsapp.url,
      WHATSAPP_ACCESS_TOKEN: 'EAAG-fallback-console-token',
      WHATSAPP_PHONE_NUMBER_ID: NUMBER,
      ADMISSION_INTERVAL_MS: '20',
      TEMPLATE_SYNC_INTERVAL_MS: '0',
    })
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
    key = await activeKey(app, { scopes: [...SEND_SCOPES, 'send:sms-fallback'], clientName: 'Parcel Post' })

    // Texted instead, then reported delivered and priced by the provider.
    const texted = await undeliverable(SMS_PHONE, 'sent')
    const [taken] = sms.sentTo(SMS_PHONE)
    const signed = sms.statusCallback(taken?.sid as string, 'delivered', {
      price: '0.0075',
      priceUnit: 'USD',
    })
    const report = await app.inject({
      method: 'POST',
      url: '/api/webhooks/sms/status',
      headers: signed.headers,
      payload: signed.body,
    })
    expect(report.statusCode, report.body).toBe(204)
    smsMessage = await messageView(app, key.key, texted.messageId)
    expect(smsMessage.fallback).toMatchObject({
      status: 'delivered',
      price: { amount: '0.00750', currency: 'USD' },
    })
    // The provider refuses the next SMS: the fallback is not sent, and the message stays WhatsApp's.
    sms.script(twilioError(21211, "The 'To' number is not a valid phone number."))
    refusedMessage = await undeliverable(REFUSED_PHONE, 'failed')
    const plain = await send(app, 'send-text', key.key, {
      phone: WHATSAPP_PHONE,
      text: 'Your parcel arrived',
    })
    expect(plain.statusCode, plain.body).toBe(202)
    await untilMessageStatus(app, key.key, plain.json<MessageView>().messageId, 'sent')
    expect(sms.sentTo(REFUSED_PHONE)).toHaveLength(0)
    expect(sms.sentTo(WHATSAPP_PHONE)).toHaveLength(0)

    browser = await launchBrowser()
    ;({ page, complaints } = await openPage(browser))
  })
  afterAll(async () => {
    await browser?.close()
    await worker?.close()
    await app?.close()
    await sms?.close()
    await whatsapp?.close()
    await world?.close()
  })

  const heading = (name: string) => page.getByRole('heading', { level: 1, name })
  const listed = () =>
    page
      .getByRole('status')
      .filter({ hasText: /^(about )?\d+ messages?$/ })
      .textContent()
  /** The value of a fact of the message page (`Channel`, `SMS fallback`, …). */
  const fact = (on: Page, name: string) =>
    on
      .locator('.facts dt')
      .filter({ hasText: new RegExp(`^${name}$`) })
      .locator('xpath=following-sibling::dd[1]')
  /** A row's Channel cell, found by the column's header. */
  const channelCell = async (phone: string) => {
    const headers = await page.getByRole('columnheader').allTextContents()
    const index = headers.indexOf('Channel')
    expect(index, `a Channel column among ${headers.join(', ')}`).toBeGreaterThanOrEqual(0)
    return page.getByRole('row').filter({ hasText: phone }).getByRole('cell').nth(index).textContent()
  }

  it('lists each message with its channel, and a fallback not sent with what became of it', async () => {
    await page.goto(`${baseUrl}/console`)
    await page.getByLabel('Admin name').fill('ana')
    await page.getByLabel('Admin token').fill(ADMIN.ana)
    await page.getByLabel('Admin token').press('Enter')
    await heading('Overview').waitFor()
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Messages' }).click()
    await heading('Messages').waitFor()
    await poll(listed).toMatch(/\b3 messages/)
    expect(await channelCell(SMS_PHONE)).toBe('SMS')
    expect(await channelCell(REFUSED_PHONE)).toBe('WhatsAppSMS not sent')
    expect(await channelCell(WHATSAPP_PHONE)).toBe('WhatsApp')
    await checkPage(page, 'console-messages-channels')
  })

  it('searches by channel: SMS lists only the message texted instead, WhatsApp every other', async () => {
    const search = page.getByRole('search', { name: 'Search messages' })
    await search.getByLabel('Channel').selectOption({ label: 'SMS' })
    await search.getByRole('button', { name: 'Search' }).click()
    await poll(listed).toMatch(/^1 message$/)
    const table = page.getByRole('table')
    expect(await table.textContent()).toContain(SMS_PHONE)
    expect(await table.textContent()).not.toContain(REFUSED_PHONE)
    expect(await table.textContent()).not.toContain(WHATSAPP_PHONE)
    // The search is in the address: reloaded, the page keeps it.
    expect(new URL(page.url()).searchParams.get('channel')).toBe('sms')
    await page.reload()
    await heading('Messages').waitFor()
    await poll(listed).toMatch(/^1 message$/)
    expect(await search.getByLabel('Channel').inputValue()).toBe('sms')
    await checkPage(page, 'console-messages-sms')

    await search.getByLabel('Channel').selectOption({ label: 'WhatsApp' })
    await search.getByRole('button', { name: 'Search' }).click()
    await poll(listed).toMatch(/^2 messages$/)
    expect(await table.textContent()).toContain(REFUSED_PHONE)
    expect(await table.textContent()).toContain(WHATSAPP_PHONE)
    expect(await table.textContent()).not.toContain(SMS_PHONE)
  })

  it('shows on the message’s page its channel, its fallback’s state, reason and time, and the SMS’s delivery', async () => {
    await page.getByRole('search', { name: 'Search messages' }).getByLabel('Channel').selectOption('')
    await page
      .getByRole('search', { name: 'Search messages' })
      .getByRole('button', { name: 'Search' })
      .click()
    await poll(listed).toMatch(/\b3 messages/)
    await page.getByRole('link', { name: smsMessage.messageId }).click()
    await heading('Message').waitFor()
    await poll(() => fact(page, 'Channel').textContent()).toBe('SMS')
    expect(await fact(page, 'SMS fallback').textContent()).toBe('Sent: the SMS provider took it')
    expect(await fact(page, 'Fallback reason').textContent()).toBe('WhatsApp could not deliver it (131026)')
    // When it was decided: the instant the API says, in the viewer's zone, UTC on hover.
    const decided = fact(page, 'Fallback decided').locator('time')
    expect(await decided.getAttribute('datetime')).toBe(smsMessage.fallback?.at)
    expect(await decided.getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/)
    expect(await fact(page, 'SMS delivery').textContent()).toBe('delivered')
    expect(await fact(page, 'SMS price').textContent()).toBe('0.00750 USD')
    // WhatsApp's own outcome stays as it was: failed, 131026.
    await page.locator('.facts .badge-failed').waitFor()
    expect(await fact(page, 'Last error').textContent()).toContain('131026')
    await poll(() => page.getByRole('list', { name: 'Timeline' }).textContent()).toMatch(
      /fallback decided.*fallback sent.*fallback delivery/is,
    )
    await checkPage(page, 'console-message-sms')
  })

  it('says why a fallback decided was not sent, and keeps the message on WhatsApp', async () => {
    await page.goto(`${baseUrl}/console/messages/${refusedMessage.messageId}`)
    await heading('Message').waitFor()
    await poll(() => fact(page, 'Channel').textContent()).toBe('WhatsApp')
    expect(await fact(page, 'SMS fallback').textContent()).toBe('Not sent: the SMS provider refused it')
    expect(await fact(page, 'Fallback reason').textContent()).toBe('WhatsApp could not deliver it (131026)')
    expect(await fact(page, 'Fallback decided').locator('time').getAttribute('datetime')).toBe(
      refusedMessage.fallback?.at,
    )
    expect(await fact(page, 'SMS error').textContent()).toMatch(/^21211 /)
    expect(await fact(page, 'SMS delivery').count()).toBe(0)
    await checkPage(page, 'console-message-sms-refused')
    expect(complaints).toEqual([])
  })

  it('shows the key holder the same in the portal', async () => {
    const portal = await openPage(browser)
    await portal.page.goto(`${baseUrl}/portal`)
    await portal.page.getByLabel('API key').fill(key.key)
    await portal.page.getByLabel('API key').press('Enter')
    await portal.page.getByRole('heading', { level: 1, name: 'Messages' }).waitFor()
    const search = portal.page.getByRole('search', { name: 'Search messages' })
    await search.getByLabel('Channel').selectOption({ label: 'SMS' })
    await search.getByRole('button', { name: 'Search' }).click()
    await poll(() => portal.page.getByRole('table').textContent()).not.toContain(WHATSAPP_PHONE)
    await portal.page.getByRole('link', { name: smsMessage.messageId }).click()
    await portal.page.getByRole('heading', { level: 1, name: 'Message' }).waitFor()
    await poll(() => fact(portal.page, 'Channel').textContent()).toBe('SMS')
    expect(await fact(portal.page, 'SMS fallback').textContent()).toBe('Sent: the SMS provider took it')
    expect(await fact(portal.page, 'Fallback reason').textContent()).toBe(
      'WhatsApp could not deliver it (131026)',
    )
    expect(await fact(portal.page, 'Fallback decided').locator('time').getAttribute('datetime')).toBe(
      smsMessage.fallback?.at,
    )
    await checkPage(portal.page, 'portal-message-sms')
    expect(portal.complaints).toEqual([])
    await portal.page.context().close()
  })
})
