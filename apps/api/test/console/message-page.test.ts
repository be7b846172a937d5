import { randomUUID } from 'node:crypto'
import type { MessageView } from '@dispatch/contracts'
import { createDb, type Db } from '@dispatch/db'
import { type FakeWhatsApp, graphError, startFakeWhatsApp } from '@dispatch/testing'
import { type RunningWorker, sweepContentRedaction } from '@dispatch/worker'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'
import { browserBinary, checkPage, launchBrowser, poll } from './browser.ts'

/**
 * A message's page in the console, in real Chromium: each error code with its meaning, linked to
 * the error codes page; a scheduled message's time in the viewer's zone (UTC on hover), and its
 * cancel by an admin, audited and never sent; a message whose content retention passed says
 * "Content discarded" and shows none of it. The browser runs in Tokyo's zone, so a time shown in
 * UTC or as the API's ISO string would not pass.
 */

const NUMBER = '100000000000452'
const ZONE = 'Asia/Tokyo'
if (browserBinary.missing)
  console.warn(`message page: the browser tests are skipped: ${browserBinary.missing}`)

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let db: { db: Db; close(): Promise<void> }
let browser: Browser
let baseUrl: string
let page: Page
const complaints: string[] = []
let failedId: string
let scheduledId: string
let sendAt: string
let discardedId: string
let bakeryKey: string
const SECRET_TEXT = `pickup-code-${randomUUID().slice(0, 8)}`

describe.skipIf(browserBinary.missing)('a message’s page in the console, in a browser', () => {
  beforeAll(async () => {
    world = await createWorld()
    fake = await startFakeWhatsApp()
    app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '10000' })
    worker = await startTestWorker(world, {
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: 'EAAG-message-page-token',
      WHATSAPP_PHONE_NUMBER_ID: NUMBER,
      WORKER_QUEUES: 'messages',
      ADMISSION_INTERVAL_MS: '20',
    })
    db = createDb(world.databaseUrl, { max: 2 })
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
    const key = await activeKey(app, { scopes: SEND_SCOPES, clientName: 'Bakery' })
    bakeryKey = key.key
    fake.number(NUMBER, { answer: graphError(131026, 'Message undeliverable') })
    const failed = await send(app, 'send-text', key.key, { phone: '+5511933334444', text: 'Your bread' })
    failedId = failed.json<MessageView>().messageId
    await untilMessageStatus(app, key.key, failedId, 'failed')
    fake.number(NUMBER, { answer: undefined })
    // An hour on, at a whole second (the API answers it as given).
    sendAt = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3600_000).toISOString()
    const scheduled = await send(app, 'send-text', key.key, {
      phone: '+5511933335555',
      text: 'Later',
      sendAt,
    })
    expect(scheduled.statusCode, scheduled.body).toBe(202)
    scheduledId = scheduled.json<MessageView>().messageId
    // A key keeping content an hour: its message, swept as it would be two hours on.
    const keeper = await activeKey(app, { scopes: SEND_SCOPES, clientName: 'Pharmacy' })
    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/admin/api-keys/${keeper.id}`,
      headers: asAdmin(),
      payload: { contentRetention: 1 },
    })
    expect(patched.statusCode, patched.body).toBe(200)
    const kept = await send(app, 'send-text', keeper.key, { phone: '+5511933336666', text: SECRET_TEXT })
    discardedId = kept.json<MessageView>().messageId
    await untilMessageStatus(app, keeper.key, discardedId, 'sent')
    expect((await sweepContentRedaction(db.db, new Date(Date.now() + 2 * 3600_000))).messages).toBe(1)

    browser = await launchBrowser()
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      timezoneId: ZONE,
      locale: 'en-US',
    })
    page = await context.newPage()
    page.setDefaultTimeout(15_000)
    page.on('pageerror', (error) => complaints.push(`page error: ${error.message}`))
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) {
        complaints.push(`console: ${message.text()}`)
      }
    })
    await page.goto(`${baseUrl}/console`)
    await page.getByLabel('Admin name').fill('ana')
    await page.getByLabel('Admin token').fill(ADMIN.ana)
    await page.getByLabel('Admin token').press('Enter')
    await heading('Overview').waitFor()
  })
  afterAll(async () => {
    await browser?.close()
    await worker?.close()
    await db?.close()
    await app?.close()
    await fake?.close()
    await world?.close()
  })

  const heading = (name: string) => page.getByRole('heading', { level: 1, name })
  const open = async (id: string) => {
    await page.goto(`${baseUrl}/console/messages/${id}`)
    await heading('Message').waitFor()
    await page.locator('.facts').waitFor()
  }
  const fact = (name: string) =>
    page
      .locator('.facts dt')
      .filter({ hasText: new RegExp(`^${name}$`) })
      .locator('xpath=following-sibling::dd[1]')
  const timeline = () => page.getByRole('list', { name: 'Timeline' })

  it('shows the last error’s code with its meaning, linked to the error codes page, and the timeline’s too', async () => {
    await open(failedId)
    const lastError = fact('Last error')
    await poll(() => lastError.textContent()).toMatch(
      /131026.*Message undeliverable.*Undeliverable: not a WhatsApp user/,
    )
    const link = lastError.getByRole('link', { name: '131026' })
    expect(await link.getAttribute('href')).toBe('/console/error-codes#code-131026')
    const failedEntry = timeline().locator('li.tl-failed')
    expect(await failedEntry.getByRole('link', { name: '131026' }).getAttribute('href')).toBe(
      '/console/error-codes#code-131026',
    )
    expect(await failedEntry.textContent()).toMatch(/Undeliverable: not a WhatsApp user/)
    // A message a worker has taken offers no cancel.
    expect(await page.getByRole('button', { name: 'Cancel message' }).count()).toBe(0)
    await checkPage(page, 'console-message-error-code')

    await link.click()
    await heading('Error codes').waitFor()
    const row = page.locator('tr#code-131026')
    expect(await row.getAttribute('class')).toBe('target')
    expect(await row.textContent()).toMatch(/^131026Undeliverable: not a WhatsApp user/)
    expect(await page.locator('tr#code-MESSAGE_EXPIRED').textContent()).toContain(
      'Not handed to the platform',
    )
    await checkPage(page, 'console-error-codes')
    // Reached by its address too, as a shared link opens it.
    await page.goto(`${baseUrl}/console/error-codes#code-131047`)
    await heading('Error codes').waitFor()
    expect(await page.locator('tr#code-131047').getAttribute('class')).toBe('target')
  })

  it('shows when a scheduled message goes in the viewer’s zone, UTC on hover, and cancels it, audited', async () => {
    await open(scheduledId)
    const entry = timeline().locator('li.tl-scheduled')
    const time = entry.locator('.tl-summary time')
    expect(await time.getAttribute('datetime')).toBe(sendAt)
    expect(await time.getAttribute('title')).toBe(`${sendAt.replace('T', ' ').replace(/\.\d+Z$|Z$/, '')} UTC`)
    const inZone = (await page.evaluate(
      `new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' }).format(new Date(${JSON.stringify(sendAt)}))`,
    )) as string
    const inUtc = new Intl.DateTimeFormat('en-US', {
      dateStyle: 'medium',
      timeStyle: 'medium',
      timeZone: 'UTC',
    }).format(new Date(sendAt))
    expect(inZone).not.toBe(inUtc)
    expect(await entry.locator('.tl-summary').textContent()).toBe(`Scheduled for ${inZone}`)
    expect(await entry.textContent()).not.toContain(sendAt)
    await checkPage(page, 'console-message-scheduled')

    await page.getByRole('button', { name: 'Cancel message' }).click()
    await poll(() => page.getByRole('status').filter({ hasText: 'Canceled' }).textContent()).toBe(
      'Canceled: it will not be sent.',
    )
    await page.locator('.facts .badge-canceled').waitFor()
    await poll(() => timeline().locator('li.tl-canceled').count()).toBe(1)
    expect(await page.getByRole('button', { name: 'Cancel message' }).count()).toBe(0)
    const audit = await world.sql`
      select actor, action from admin_audit_log where target_type = 'message' and target_id = ${scheduledId}`
    expect(audit).toEqual([{ actor: 'ana', action: 'message.cancel' }])
    expect(fake.sendsOf(scheduledId)).toBe(0)
    await checkPage(page, 'console-message-canceled')
  })

  it('says "Content discarded" on a message whose content retention passed, and shows none of it', async () => {
    await open(discardedId)
    const request = page.getByRole('region', { name: 'Request' })
    await poll(() => request.textContent()).toContain('Content discarded')
    expect(await request.textContent()).not.toContain(SECRET_TEXT)
    expect(await fact('Status').textContent()).toBe('sent')
    await checkPage(page, 'console-message-discarded')
    expect(complaints).toEqual([])
  })

  it('links the code to the portal’s own error codes page for the key holder', async () => {
    const portal = await page.context().browser()?.newPage()
    if (!portal) throw new Error('no page')
    await portal.goto(`${baseUrl}/portal`)
    await portal.getByLabel('API key').fill(bakeryKey)
    await portal.getByLabel('API key').press('Enter')
    await portal.getByRole('heading', { level: 1, name: 'Messages' }).waitFor()
    await portal.goto(`${baseUrl}/portal/messages/${failedId}`)
    const link = portal.locator('.facts').getByRole('link', { name: '131026' })
    expect(await link.getAttribute('href')).toBe('/portal/error-codes#code-131026')
    await link.click()
    await portal.getByRole('heading', { level: 1, name: 'Error codes' }).waitFor()
    expect(await portal.locator('tr#code-131026').getAttribute('class')).toBe('target')
    await checkPage(portal, 'portal-error-codes')
    await portal.close()
  })
})
