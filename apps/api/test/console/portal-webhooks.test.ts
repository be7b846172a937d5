import { WEBHOOK_EVENT_TYPES, type WebhookEndpointWithSecret } from '@dispatch/contracts'
import { startWebhookReceiver, type WebhookReceiver, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import type { Browser, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  buildTestApp,
  createWorld,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { browserBinary, checkPage, launchBrowser, openPage, poll } from './browser.ts'

/**
 * The portal's webhooks as Svix's App Portal has them, in real Chromium: the event catalog (every
 * type, what it means, an example body), an example event sent to an endpoint and followed to its
 * attempts (request, answer, time), and a key without `manage:webhooks` told in words what to ask
 * an admin for. Every page checked with axe-core and walked with the keyboard.
 */

if (browserBinary.missing)
  console.warn(`portal webhooks: the browser tests are skipped: ${browserBinary.missing}`)

let world: TestWorld
let app: TestApp
let worker: RunningWorker
let receiver: WebhookReceiver
let browser: Browser
let baseUrl: string
let page: Page
let complaints: string[]
let key: { id: string; key: string }
let withoutScope: { id: string; key: string }
let endpoint: WebhookEndpointWithSecret

describe.skipIf(browserBinary.missing)('the portal’s webhooks, in a browser', () => {
  beforeAll(async () => {
    world = await createWorld()
    // The first delivery is refused, so its attempt shows an answer; the retry, a second on, is taken.
    receiver = await startWebhookReceiver()
    receiver.answer = (_request, index) =>
      index === 0 ? { status: 500, body: 'receiver warming up' } : { status: 204 }
    app = await buildTestApp(world)
    worker = await startTestWorker(world, { WEBHOOK_RETRY_SCHEDULE: '1s,1h' })
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
    key = await activeKey(app, { scopes: ['send:free-text', 'manage:webhooks'], clientName: 'Bistro Norte' })
    withoutScope = await activeKey(app, { scopes: ['send:free-text'], clientName: 'No hooks' })
    const created = await addWebhookEndpoint(app, key.key, {
      url: `${receiver.url}/hooks`,
      events: ['message.received'],
    })
    endpoint = created.json<WebhookEndpointWithSecret>()
    browser = await launchBrowser()
    ;({ page, complaints } = await openPage(browser))
  })
  afterAll(async () => {
    await browser?.close()
    await worker?.close()
    await app?.close()
    await receiver?.close()
    await world?.close()
  })

  const heading = (name: string) => page.getByRole('heading', { level: 1, name })
  const signIn = async (target: Page, apiKey: string) => {
    await target.goto(`${baseUrl}/portal`)
    await target.getByLabel('API key').fill(apiKey)
    await target.getByLabel('API key').press('Enter')
    await target.getByRole('heading', { level: 1, name: 'Messages' }).waitFor()
    await target.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks' }).click()
  }

  it('says, with no endpoint yet, how one is added: through the API, with a link to its docs', async () => {
    const empty = await activeKey(app, {
      scopes: ['send:free-text', 'manage:webhooks'],
      clientName: 'No endpoint yet',
    })
    const { page: second, complaints: secondComplaints } = await openPage(browser)
    await signIn(second, empty.key)
    await second.getByRole('heading', { level: 1, name: 'Webhook endpoints' }).waitFor()
    const note = second.getByText(/^No endpoint yet\./)
    await poll(() => note.textContent()).toContain('POST /api/third-party/webhook-endpoints')
    const docs = note.getByRole('link', { name: 'how, in the API docs' })
    const href = (await docs.getAttribute('href')) ?? ''
    expect(href).toBe('/docs#/webhooks/createWebhookEndpoint')
    // The docs page is there (the fragment is Swagger UI's, read in the browser).
    expect((await second.request.get(`${baseUrl}${href.split('#')[0]}`)).status()).toBe(200)
    await checkPage(second, 'portal-webhooks-empty')
    expect(secondComplaints).toEqual([])
    await second.context().close()
  })

  it('shows the event catalog: every type the service sends, with what it means and an example', async () => {
    await signIn(page, key.key)
    await heading('Webhook endpoints').waitFor()
    await page.getByRole('link', { name: 'Event catalog' }).click()
    await heading('Event catalog').waitFor()
    for (const type of WEBHOOK_EVENT_TYPES) {
      await page.getByRole('region', { name: type, exact: true }).waitFor()
    }
    const failed = page.getByRole('region', { name: 'message.failed', exact: true })
    const text = (await failed.textContent()) ?? ''
    expect(text).toContain('willRetry')
    expect(text).toContain('"example": true')
    expect(text).toContain('"type": "message.failed"')
    expect(text).toContain('"code": "131026"')
    await checkPage(page, 'portal-webhook-event-catalog')
  })

  it('sends an example event to an endpoint, and shows its attempts: the request and each answer', async () => {
    await page.getByRole('link', { name: 'All endpoints' }).click()
    await page.getByRole('link', { name: `${receiver.url}/hooks` }).click()
    await heading('Webhook endpoint').waitFor()
    const form = page.getByRole('form', { name: 'Send an example event' })
    await form.getByLabel('Event type').selectOption('message.delivered')
    // The example's body, before it is sent.
    const section = page.getByRole('region', { name: 'Send an example event' })
    await poll(() => section.textContent()).toContain('"type": "message.delivered"')
    await checkPage(page, 'portal-webhook-send-example')
    await form.getByRole('button', { name: 'Send example' }).click()
    await poll(() => section.getByRole('status').textContent()).toMatch(/Example msg_[0-9a-f]{32} queued/)
    const eventId =
      /msg_[0-9a-f]{32}/.exec((await section.getByRole('status').textContent()) ?? '')?.[0] ?? ''

    // It arrives signed with the endpoint's secret, marked as an example, though the endpoint
    // subscribes to message.received only.
    await waitFor(() => receiver.deliveriesOf(eventId).length >= 2, {
      what: 'the example, refused then taken',
    })
    const [first] = receiver.deliveriesOf(eventId)
    new Webhook(endpoint.secret).verify(first?.body ?? '', first?.headers as Record<string, string>)
    expect(JSON.parse(first?.body ?? '{}')).toMatchObject({ type: 'message.delivered', example: true })

    // Both attempts listed: refused with its answer, then delivered.
    const attempts = page.getByRole('region', { name: 'Attempts' })
    await poll(() => attempts.textContent(), 20_000).toContain('delivered 204')
    expect(await attempts.textContent()).toContain('failed 500')
    await attempts
      .getByRole('button', { name: new RegExp(`^Details of attempt 1 of message\\.delivered ${eventId}`) })
      .last()
      .click()
    const details = page.getByRole('region', { name: 'Attempt details' })
    await poll(() => details.textContent()).toContain(`webhook-id: ${eventId}`)
    const shown = (await details.textContent()) ?? ''
    expect(shown).toContain('HTTP 500')
    expect(shown).toContain('receiver warming up')
    expect(shown).toContain('"example": true')
    expect(shown).toMatch(/When/)
    await checkPage(page, 'portal-webhook-example-attempt')
    expect(complaints).toEqual([])
  })

  it('explains a missing manage:webhooks in words, on the endpoints and the catalog alike', async () => {
    const { page: second } = await openPage(browser)
    await signIn(second, withoutScope.key)
    const note = second.getByRole('alert')
    await poll(() => note.textContent()).toContain('approved without the "manage:webhooks" scope')
    await second.getByRole('link', { name: 'Event catalog' }).click()
    await second.getByRole('heading', { level: 1, name: 'Event catalog' }).waitFor()
    await poll(() => second.getByRole('alert').textContent()).toMatch(
      /approved without the "manage:webhooks" scope.*request a key that includes manage:webhooks.*admin to approve it/,
    )
    expect(await second.getByRole('main').textContent()).not.toContain('INSUFFICIENT_SCOPE')
    await checkPage(second, 'portal-webhook-event-catalog-no-scope')
    await second.context().close()
  })
})
