import { randomUUID } from 'node:crypto'
import type { MessageView } from '@dispatch/contracts'
import {
  type FakeWhatsApp,
  startFakeWhatsApp,
  startWebhookReceiver,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  addWebhookEndpoint,
  buildTestApp,
  createWorld,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'
import {
  browserBinary,
  checkPage,
  expectNoOverlappingText,
  launchBrowser,
  openPage,
  poll,
} from './browser.ts'

/**
 * A key holder's portal in real Chromium: signs in with its key (which the browser does not keep),
 * sees its own message and its timeline and not another key's, retries a failed webhook delivery,
 * reads its limits and usage, sends a test message and follows its timeline; every page checked with axe-core
 * and walked with the keyboard.
 */

const OWN_PHONE = '+5511933334444'
const OTHER_PHONE = '+5511955556666'
/** The key's message accepted three hours before the test. */
const EARLIER_PHONE = '+5511966667777'
/** The key's message refused by the platform: outside the 24-hour window. */
const FAILED_PHONE = '+5511988889999'
if (browserBinary.missing) console.warn(`portal: the browser tests are skipped: ${browserBinary.missing}`)

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let receiver: WebhookReceiver
let worker: RunningWorker
let browser: Browser
let baseUrl: string
let page: Page
let complaints: string[]
let own: { id: string; key: string }
let endpointId: string
let otherKey: string
let ownMessage: string
let otherMessage: string

const sendText = async (apiKey: string, phone: string) => {
  const res = await send(app, 'send-text', apiKey, { phone, text: 'Your table is ready' })
  expect(res.statusCode, res.body).toBe(202)
  const { messageId } = res.json<MessageView>()
  await untilMessageStatus(app, apiKey, messageId, 'sent')
  return messageId
}

describe.skipIf(browserBinary.missing)('the portal, in a browser', () => {
  beforeAll(async () => {
    world = await createWorld()
    fake = await startFakeWhatsApp()
    // The receiver refuses the first delivery, and takes every one after it.
    receiver = await startWebhookReceiver()
    receiver.answer = (_request, index) => (index === 0 ? { status: 500, body: 'not now' } : { status: 204 })
    app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '10000' })
    worker = await startTestWorker(world, {
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: 'EAAG-portal-test-token',
      WHATSAPP_PHONE_NUMBER_ID: '100000000000425',
      MESSAGES_BACKOFF_MS: '20',
      ADMISSION_INTERVAL_MS: '20',
      // The failed delivery's own retry is far off: the test retries it from the page.
      WEBHOOK_RETRY_SCHEDULE: '1h',
    })
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
    own = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'], clientName: 'Bistro Centro' })
    const other = await activeKey(app, { scopes: SEND_SCOPES, clientName: 'Someone else' })
    otherKey = other.key
    const endpoint = await addWebhookEndpoint(app, own.key, {
      url: `${receiver.url}/hooks`,
      events: ['message.sent'],
    })
    endpointId = endpoint.json<{ id: string }>().id
    ownMessage = await sendText(own.key, OWN_PHONE)
    otherMessage = await sendText(other.key, OTHER_PHONE)
    await waitFor(() => receiver.received.length >= 1, { what: 'the first (refused) delivery' })
    browser = await launchBrowser()
    ;({ page, complaints } = await openPage(browser))
  })
  afterAll(async () => {
    await browser?.close()
    await worker?.close()
    await app?.close()
    await receiver?.close()
    await fake?.close()
    await world?.close()
  })

  const go = (path: string) => page.goto(`${baseUrl}/portal${path}`)
  const heading = (name: string) => page.getByRole('heading', { level: 1, name })
  const nav = (name: string) =>
    page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name }).click()

  it('signs in with the key, which the browser does not keep', async () => {
    await go('')
    await heading('Dispatch portal').waitFor()
    await checkPage(page, 'portal-sign-in')
    await page.getByLabel('API key').fill(own.key)
    await page.getByLabel('API key').press('Enter')
    await heading('Messages').waitFor()
    expect(await page.getByText('Signed in as').textContent()).toContain('Bistro Centro')
    // Not production, on the sandbox: said in a band above the page's content.
    const notice = page.getByRole('note', { name: 'About this service' })
    expect(await notice.textContent()).toBe(
      'This is a development service. Messages go to the sandbox platform: they are recorded as sent, and reach no one on WhatsApp.',
    )
    const [band, title] = await Promise.all([notice.boundingBox(), heading('Messages').boundingBox()])
    expect(band?.height).toBeGreaterThan(10)
    expect((band?.y ?? Number.NaN) + (band?.height ?? 0)).toBeLessThanOrEqual(title?.y ?? Number.NaN)
    const kept = (await page.evaluate(
      '[JSON.stringify(localStorage), JSON.stringify(sessionStorage), document.cookie, document.body.innerHTML].join()',
    )) as string
    expect(kept).not.toContain(own.key)
    expect(kept).not.toContain(own.key.slice(-12))
  })

  it('lists its own message, not another key’s', async () => {
    await poll(() => page.getByRole('table').textContent()).toContain(OWN_PHONE)
    expect(await page.getByRole('main').textContent()).not.toContain(OTHER_PHONE)
    await checkPage(page, 'portal-messages')
    // Another key's message by its address: the API answers not found, and the page says so.
    const asked: string[] = []
    const count = (request: { url(): string }) => {
      if (request.url().includes(otherMessage)) asked.push(request.url())
    }
    page.on('request', count)
    await go(`/messages/${otherMessage}`)
    await heading('Message').waitFor()
    await poll(() => page.getByRole('alert').textContent()).toContain('NOT_FOUND')
    expect(await page.getByRole('main').textContent()).not.toContain(OTHER_PHONE)
    // …and stops asking: a live message's page refreshes every 3 s, a not-found one does not.
    const afterAnswer = asked.length
    await page.waitForTimeout(4_000)
    page.off('request', count)
    expect(afterAnswer).toBeGreaterThan(0)
    expect(asked.length).toBe(afterAnswer)
  })

  it('bounds its messages by a time range kept in the address', async () => {
    const threeHoursAgo = new Date(Date.now() - 3 * 3_600_000).toISOString()
    await world.sql`
      insert into messages (id, api_key_id, type, phone, payload, status, attempts, accepted_at, updated_at)
      values (${randomUUID()}, ${own.id}, 'text', ${EARLIER_PHONE},
        ${world.sql.json({ phone: EARLIER_PHONE, text: 'Earlier' })}, 'queued', 0, ${threeHoursAgo},
        ${threeHoursAgo})`
    await go('/messages')
    await heading('Messages').waitFor()
    const table = page.getByRole('table', { name: 'Messages' })
    await poll(() => table.textContent()).toContain(EARLIER_PHONE)
    const picker = page.getByRole('group', { name: 'Time range' })
    await picker.getByRole('button', { name: '1h' }).click()
    await poll(() => table.textContent()).not.toContain(EARLIER_PHONE)
    expect(await table.textContent()).toContain(OWN_PHONE)
    expect(new URL(page.url()).searchParams.get('range')).toBe('1h')
    await picker.getByRole('button', { name: '7d' }).click()
    await poll(() => table.textContent()).toContain(EARLIER_PHONE)
    await page.reload()
    await heading('Messages').waitFor()
    await poll(() => table.textContent()).toContain(EARLIER_PHONE)
    expect(await picker.getByRole('button', { name: '7d' }).getAttribute('aria-pressed')).toBe('true')
    await checkPage(page, 'portal-messages-range')
  })

  it('names its failed message’s last error with what it means, linked to the error codes page', async () => {
    await world.sql`
      insert into messages (id, api_key_id, type, phone, payload, status, attempts, last_error_code,
        last_error_message, accepted_at, updated_at)
      values (${randomUUID()}, ${own.id}, 'text', ${FAILED_PHONE},
        ${world.sql.json({ phone: FAILED_PHONE, text: 'Still there?' })}, 'failed', 1, '131047',
        'Re-engagement message', now(), now())`
    await go('/messages')
    await heading('Messages').waitFor()
    const row = page
      .getByRole('table', { name: 'Messages' })
      .getByRole('row')
      .filter({ hasText: FAILED_PHONE })
    await poll(() => row.count()).toBe(1)
    // The code, and under it what it means in a few words; the whole meaning on hover.
    const meaning = row.getByRole('link', { name: 'Outside the 24-hour window' })
    const lastError = row
      .getByRole('cell')
      .filter({ has: page.getByRole('link', { name: 'Outside the 24-hour window' }) })
    expect(await lastError.locator('code').textContent()).toBe('131047')
    expect(await meaning.getAttribute('href')).toBe('/portal/error-codes#code-131047')
    expect(await meaning.getAttribute('title')).toMatch(/^Outside the 24-hour window: only a template/)
    // Clear of the cells beside it, in a narrow window and a wide one.
    for (const width of [800, 1280]) {
      await page.setViewportSize({ width, height: 900 })
      await expectNoOverlappingText(page, 'main', `the messages at ${width} px`)
    }
    await checkPage(page, 'portal-messages-failed')
    // …and opens its row on the error codes page.
    await meaning.click()
    await heading('Error codes').waitFor()
    expect(await page.locator('tr#code-131047').getAttribute('class')).toBe('target')
  })

  it('shows its message’s timeline, with the webhook attempt', async () => {
    await go(`/messages/${ownMessage}`)
    await heading('Message').waitFor()
    const timeline = page.getByRole('list', { name: 'Timeline' })
    await poll(() => timeline.textContent()).toMatch(/sent.*webhook attempt/is)
    // The send as it was asked for.
    const request = page.getByRole('region', { name: 'Request' })
    expect(await request.textContent()).toContain('"text": "Your table is ready"')
    await checkPage(page, 'portal-message')
  })

  it('cancels a scheduled message from its page', async () => {
    const sendAt = new Date(Date.now() + 3_600_000).toISOString()
    const res = await send(app, 'send-text', own.key, { phone: OWN_PHONE, text: 'See you tomorrow', sendAt })
    expect(res.statusCode, res.body).toBe(202)
    const { messageId } = res.json<MessageView>()
    await go(`/messages/${messageId}`)
    await heading('Message').waitFor()
    await page.locator('.facts .badge-scheduled').waitFor()
    await checkPage(page, 'portal-message-scheduled')
    await page.getByRole('button', { name: 'Cancel message' }).click()
    await poll(() => page.getByRole('status').filter({ hasText: 'Canceled' }).count()).toBe(1)
    await page.locator('.facts .badge-canceled').waitFor()
    // Nothing left to cancel: the button is gone, and the API agrees.
    expect(await page.getByRole('button', { name: 'Cancel message' }).count()).toBe(0)
    const read = await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${messageId}`,
      headers: { 'x-api-key': own.key },
    })
    expect(read.json<MessageView>().status).toBe('canceled')
  })

  it('retries the refused webhook delivery, which now arrives', async () => {
    await nav('Webhooks')
    await heading('Webhook endpoints').waitFor()
    await checkPage(page, 'portal-webhooks')
    // Each endpoint's whole id, with a button that copies it.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl })
    const copied = () => page.evaluate('navigator.clipboard.readText()')
    await page.getByRole('button', { name: `Copy endpoint id ${endpointId}` }).click()
    await poll(copied).toBe(endpointId)
    await page.getByRole('link', { name: `${receiver.url}/hooks` }).click()
    await heading('Webhook endpoint').waitFor()
    expect(await page.locator('.facts').first().textContent()).toContain(endpointId)
    const attempts = page.getByRole('region', { name: 'Attempts' })
    await poll(() => attempts.textContent()).toContain('failed 500')
    // …and each attempt's event id (the `webhook-id` the receiver got).
    const eventId = String(receiver.received[0]?.headers['webhook-id'])
    await attempts
      .getByRole('button', { name: `Copy event id ${eventId}` })
      .first()
      .click()
    await poll(copied).toBe(eventId)
    await checkPage(page, 'portal-webhook-endpoint')
    // The refused attempt as the receiver met it: the request it got, what it answered.
    await attempts.getByRole('button', { name: /^Details of attempt 1 of message\.sent/ }).click()
    const details = page.getByRole('region', { name: 'Attempt details' })
    const first = receiver.received[0]
    await poll(() => details.textContent()).toContain(`webhook-id: ${first?.headers['webhook-id']}`)
    const detailsText = (await details.textContent()) ?? ''
    expect(detailsText).toContain('HTTP 500')
    expect(detailsText).toContain('not now')
    expect(detailsText).toContain(`"messageId": "${ownMessage}"`)
    await checkPage(page, 'portal-webhook-attempt')
    await details.getByRole('button', { name: 'Close details' }).click()
    await attempts.getByRole('button', { name: /^Retry event message\.sent/ }).click()
    await waitFor(() => receiver.received.length >= 2, { what: 'the retried delivery', timeoutMs: 15_000 })
    await poll(() => attempts.textContent(), 15_000).toContain('delivered 204')
    // Every event of the last hour, delivered again.
    const replay = page.getByRole('form', { name: 'Replay a window' })
    const hourAgo = new Date(Date.now() - 3_600_000 - new Date().getTimezoneOffset() * 60_000)
    await replay.getByLabel('Since').fill(hourAgo.toISOString().slice(0, 16))
    await replay.getByRole('button', { name: 'Replay events' }).click()
    await poll(() => page.getByText('1 event queued again.').isVisible()).toBe(true)
    await waitFor(() => receiver.received.length >= 3, { what: 'the replayed delivery', timeoutMs: 15_000 })
    await page.getByRole('button', { name: 'Rotate secret' }).click()
    await poll(() => page.locator('code.secret').textContent()).toMatch(/^whsec_/)
  })

  it('shows its limits and usage today', async () => {
    await nav('Limits and usage')
    await heading('Limits and usage').waitFor()
    // The sent one and the canceled one: both were accepted.
    await poll(() => page.getByRole('region', { name: 'Today' }).textContent()).toMatch(/Accepted today\s*2/)
    await checkPage(page, 'portal-usage')
  })

  it('sends a test message and follows it to sent', async () => {
    await nav('Send a test')
    await heading('Send a test message').waitFor()
    await checkPage(page, 'portal-send')
    await page.getByLabel('Phone (international format)').fill('+5511977778888')
    await page.getByLabel('Text').fill('Hello from the portal')
    await page.getByRole('button', { name: 'Send', exact: true }).click()
    // The answer is the message's timeline, followed live on the page.
    const answer = page.getByRole('region', { name: 'Your test message' })
    await poll(() => answer.locator('.facts .badge').textContent(), 15_000).toBe('sent')
    expect(await answer.getByRole('list', { name: 'Timeline' }).textContent()).toMatch(/accepted.*sent/is)
    await answer.getByRole('link', { name: "Open the message's page" }).click()
    await heading('Message').waitFor()
    await poll(() => page.locator('.facts .badge').textContent(), 15_000).toBe('sent')
  })

  it('explains a missing scope in words, and what to ask an admin for', async () => {
    // Another browser, another key: this one was approved without manage:webhooks.
    const { page: second } = await openPage(browser)
    await second.goto(`${baseUrl}/portal`)
    await second.getByLabel('API key').fill(otherKey)
    await second.getByLabel('API key').press('Enter')
    await second.getByRole('heading', { level: 1, name: 'Messages' }).waitFor()
    await second.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks' }).click()
    const note = second.getByRole('alert')
    await poll(() => note.textContent()).toContain('approved without the "manage:webhooks" scope')
    expect(await note.textContent()).toMatch(
      /request a key that includes manage:webhooks.*admin to approve it/,
    )
    expect(await note.textContent()).not.toContain('INSUFFICIENT_SCOPE')
    await checkPage(second, 'portal-webhooks-no-scope')
    await second.context().close()
  })

  it('signs out: the session ends', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click()
    await heading('Dispatch portal').waitFor()
    await go('/webhooks')
    await heading('Dispatch portal').waitFor()
    expect(complaints).toEqual([])
  })

  it('says neither in the portal nor in the console when the service is production on the Cloud API', async () => {
    // Another API on the same database: production, with a WhatsApp number of its own.
    const production = await buildTestApp(world, {
      APP_ENV: 'production',
      SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: 'EAAG-portal-production-token',
      WHATSAPP_PHONE_NUMBER_ID: '100000000000426',
    })
    const { page: live, complaints: liveComplaints } = await openPage(browser)
    try {
      const liveUrl = await production.listen({ host: '127.0.0.1', port: 0 })
      const liveKey = await activeKey(production, { scopes: SEND_SCOPES, clientName: 'Bistro Live' })
      const notice = live.getByRole('note', { name: 'About this service' })
      await live.goto(`${liveUrl}/portal`)
      await live.getByLabel('API key').fill(liveKey.key)
      await live.getByLabel('API key').press('Enter')
      await live.getByRole('heading', { level: 1, name: 'Messages' }).waitFor()
      expect(await live.getByText('Signed in as').textContent()).toContain('Bistro Live')
      expect(await notice.count()).toBe(0)
      await live.goto(`${liveUrl}/console`)
      await live.getByLabel('Admin name').fill('ana')
      await live.getByLabel('Admin token').fill(ADMIN.ana)
      await live.getByLabel('Admin token').press('Enter')
      await live.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
      expect(await notice.count()).toBe(0)
      expect(liveComplaints).toEqual([])
    } finally {
      await live.context().close()
      await production.close()
    }
  })
})
