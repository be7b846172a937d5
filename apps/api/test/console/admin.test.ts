import { randomUUID } from 'node:crypto'
import { MESSAGE_STATUSES, type MessageView } from '@dispatch/contracts'
import {
  type FakeTemplate,
  type FakeWhatsApp,
  graphError,
  startFakeWhatsApp,
  startSmtpServer,
  type TestSmtpServer,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  requestKey,
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
 * The admins' console in real Chromium, served by the API from the built app (the test run builds
 * it first): sign in, approve a key request with a tenant (its e-mail arrives), find a failed
 * message by phone, read its failed attempt on the timeline, retry it and watch it sent, pause and
 * resume the messages queue; every page checked with axe-core and walked with the keyboard.
 */

const NUMBER = '100000000000424'
const FAILING_PHONE = '+5511911112222'
/** Two more failed messages, to one phone: retried together, by a search. */
const OUTAGE_PHONE = '+5511922223333'
/** A message accepted three hours before the test: outside the last hour, inside the last day. */
const EARLIER_PHONE = '+5511944445555'
/** The WhatsApp Business Account the sender's page gives its sender, and its catalog on the fake. */
const WABA_ID = '102290129340398'
const template = (
  id: string,
  name: string,
  components: unknown[],
  more: Partial<FakeTemplate> = {},
): FakeTemplate => ({
  id,
  name,
  language: 'en_US',
  status: 'APPROVED',
  category: 'UTILITY',
  parameter_format: 'POSITIONAL',
  components,
  ...more,
})
/** With Meta's examples for its header and body. */
const ORDER_UPDATE = template('7001', 'order_update', [
  { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['4921'] } },
  {
    type: 'BODY',
    text: 'Hello {{1}}, your order {{2}} is on its way.',
    example: { body_text: [['Ana', '4921']] },
  },
  { type: 'FOOTER', text: 'Acme Store' },
])
/** Without examples: previewed with its variables' names. */
const REMINDER = template(
  '7002',
  'appointment_reminder',
  [{ type: 'BODY', text: 'Hi {{first_name}}, see you on {{date}}.' }],
  { parameter_format: 'NAMED' },
)
/** Named, with examples, and buttons. */
const FEEDBACK = template(
  '7003',
  'visit_feedback',
  [
    {
      type: 'BODY',
      text: 'How was your visit to {{store}}?',
      example: { body_text_named_params: [{ param_name: 'store', example: 'Acme Centro' }] },
    },
    { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'Great' }] },
  ],
  { parameter_format: 'NAMED' },
)
if (browserBinary.missing) console.warn(`console: the browser tests are skipped: ${browserBinary.missing}`)

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let smtp: TestSmtpServer
let worker: RunningWorker
let browser: Browser
let baseUrl: string
let page: Page
let complaints: string[]
let failedId: string
const outageIds: string[] = []
let senderKey: string
let senderKeyId: string

describe.skipIf(browserBinary.missing)('the console, in a browser', () => {
  beforeAll(async () => {
    world = await createWorld()
    fake = await startFakeWhatsApp()
    smtp = await startSmtpServer()
    app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '10000', WHATSAPP_API_URL: fake.url })
    worker = await startTestWorker(world, {
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: 'EAAG-console-test-token',
      WHATSAPP_PHONE_NUMBER_ID: NUMBER,
      MESSAGES_BACKOFF_MS: '20',
      ADMISSION_INTERVAL_MS: '20',
      SMTP_URL: smtp.url,
    })
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
    // A message the platform refuses for good: it fails at its first attempt.
    const sender = await activeKey(app, { scopes: SEND_SCOPES, clientName: 'Shop sending' })
    fake.number(NUMBER, { answer: graphError(131026, 'Message undeliverable') })
    const accepted = await send(app, 'send-text', sender.key, {
      phone: FAILING_PHONE,
      text: 'Your order shipped',
    })
    expect(accepted.statusCode, accepted.body).toBe(202)
    failedId = accepted.json<MessageView>().messageId
    await untilMessageStatus(app, sender.key, failedId, 'failed')
    for (const text of ['Your invoice', 'Your receipt']) {
      const more = await send(app, 'send-text', sender.key, { phone: OUTAGE_PHONE, text })
      outageIds.push(more.json<MessageView>().messageId)
    }
    for (const id of outageIds) await untilMessageStatus(app, sender.key, id, 'failed')
    senderKey = sender.key
    senderKeyId = sender.id
    fake.number(NUMBER, { answer: undefined })
    browser = await launchBrowser()
    ;({ page, complaints } = await openPage(browser))
  })
  afterAll(async () => {
    await browser?.close()
    await worker?.close()
    await app?.close()
    await fake?.close()
    await smtp?.close()
    await world?.close()
  })

  const go = (path: string) => page.goto(`${baseUrl}/console${path}`)

  /**
   * Where the chart's cursor lands with the mouse at `fraction` of the plot's width from its left
   * edge: the centres of its points (one a series, on the bucket nearest the mouse), as fractions.
   */
  async function cursorAt(fraction: number) {
    const plot = await page.locator('.chart .u-over').boundingBox()
    if (!plot) throw new Error('no plot')
    await page.mouse.move(plot.x + fraction * plot.width, plot.y + plot.height / 2)
    const centres: number[] = []
    for (const point of await page.locator('.chart .u-cursor-pt').all()) {
      const box = await point.boundingBox()
      if (box && box.width > 0) centres.push((box.x + box.width / 2 - plot.x) / plot.width)
    }
    return centres
  }

  /**
   * The chart's buckets spread across the whole plot, which fills the chart's width: at its left
   * edge, its middle and its right edge the cursor finds a bucket there, not one squeezed against
   * the right edge.
   */
  async function expectChartSpansPlot(range: string) {
    const chart = page.locator('.chart')
    await chart.scrollIntoViewIfNeeded()
    const [outer, plot] = await Promise.all([
      chart.boundingBox(),
      page.locator('.chart .u-over').boundingBox(),
    ])
    expect(plot?.width, `${range}: the plot's width`).toBeGreaterThan(0.8 * (outer?.width ?? 0))
    for (const [at, from, to] of [
      [0.005, 0, 0.03],
      [0.5, 0.47, 0.53],
      [0.995, 0.95, 1],
    ] as const) {
      await poll(() => cursorAt(at)).toSatisfy(
        (centres: number[]) => centres.length > 0 && centres.every((x) => x >= from - 0.005 && x <= to),
        `${range}: the cursor, at ${at} of the plot's width, finds a bucket between ${from} and ${to}`,
      )
    }
    await page.mouse.move(0, 0)
  }
  /**
   * The chart drawn edge to edge of its box, the box's width changing with the window's: narrower,
   * then wider than the width it was first drawn at (uPlot keeps a width until it is given another).
   */
  async function expectChartFollowsWindow() {
    const chart = page.locator('.chart')
    const gaps = async () => {
      const [box, plot] = await Promise.all([
        chart.boundingBox(),
        page.locator('.chart .u-wrap').boundingBox(),
      ])
      if (!box || !plot) return { box: 0, left: Number.NaN, right: Number.NaN }
      return { box: box.width, left: plot.x - box.x, right: box.x + box.width - (plot.x + plot.width) }
    }
    const edgeToEdge = ({ left, right }: { left: number; right: number }) =>
      Math.abs(left) <= 1 && Math.abs(right) <= 1
    await chart.scrollIntoViewIfNeeded()
    const drawn = await gaps()
    expect(edgeToEdge(drawn), `the plot spans its box as first drawn: ${JSON.stringify(drawn)}`).toBe(true)
    const widths: number[] = []
    for (const width of [960, 1440]) {
      await page.setViewportSize({ width, height: 900 })
      await poll(gaps).toSatisfy(edgeToEdge, `at ${width} px, the plot spans its box`)
      widths.push((await gaps()).box)
    }
    // The box did narrow and widen, so the plot followed it both ways.
    expect(widths[0]).toBeLessThan(drawn.box - 100)
    expect(widths[1]).toBeGreaterThan(drawn.box + 50)
    await page.setViewportSize({ width: 1280, height: 900 })
  }
  const heading = (name: string) => page.getByRole('heading', { level: 1, name })

  /**
   * No text of the overview drawn over other text, at widths where its sections sit two and three
   * abreast, each at its narrowest (910 and 1360 px): the backlog's table (its "Paused" header
   * last) is wider than its cell there, and scrolls in it rather than spilling over the empty
   * "Senders needing attention" beside it.
   */
  async function expectOverviewClear(what: string) {
    for (const width of [1280, 1360, 1440, 910]) {
      await page.setViewportSize({ width, height: 900 })
      await expectNoOverlappingText(page, 'main', `${what} at ${width} px`)
    }
    await page.setViewportSize({ width: 1280, height: 900 })
  }

  it('asks for a name and token, refuses a wrong one, and signs in with the right one', async () => {
    await go('')
    await poll(() => heading('Dispatch console').isVisible()).toBe(true)
    await checkPage(page, 'console-sign-in')
    await page.getByLabel('Admin name').fill('ana')
    await page.getByLabel('Admin token').fill('not-the-token')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await poll(() => page.getByRole('alert').textContent()).toContain('ADMIN_AUTH_REQUIRED')
    // By keyboard alone: type, then Enter submits.
    await page.getByLabel('Admin name').fill('ana')
    await page.getByLabel('Admin token').fill(ADMIN.ana)
    await page.getByLabel('Admin token').press('Enter')
    await heading('Overview').waitFor()
    expect(await page.getByText('Signed in as').textContent()).toContain('ana')
    // Not production, on the sandbox: every page says so above its content.
    const notice = page.getByRole('note', { name: 'About this service' })
    expect(await notice.textContent()).toMatch(/development service.*sandbox platform.*reach no one/)
    // The session survives a reload: the page reads it back (and its CSRF token) from the API.
    await page.reload()
    await heading('Overview').waitFor()
  })

  it('shows the overview: the chart, the backlog, the last hour’s errors with their meaning', async () => {
    await page.getByRole('heading', { name: 'Top errors (1 h)' }).waitFor()
    await page.locator('.chart canvas').waitFor()
    const errors = page.getByRole('region', { name: 'Top errors (1 h)' })
    await poll(() => errors.textContent()).toContain('131026')
    // Beside the code, what it means in a few words, linking to the whole of it.
    const meaning = errors.getByRole('row', { name: /131026/ }).getByRole('link', { name: 'Undeliverable' })
    expect(await meaning.getAttribute('href')).toBe('/console/error-codes#code-131026')
    expect(await meaning.getAttribute('title')).toMatch(/^Undeliverable: not a WhatsApp user/)
    // The last hour by minute first.
    await page.getByRole('heading', { name: 'Messages per minute (hour)' }).waitFor()
    await checkPage(page, 'console-overview')
    // Each range's chart spans the plot from edge to edge, whatever few buckets had messages, and
    // its legend names the statuses (no "--" until hovered).
    const picker = page.getByRole('group', { name: 'Time range' })
    for (const [range, title, totals] of [
      ['24h', 'Messages per quarter hour (24 hours)', /^In the last 24 hours:.*3 failed/],
      ['7d', 'Messages per hour (7 days)', /^In the last 7 days:.*3 failed/],
      ['1h', 'Messages per minute (hour)', /^In the last hour:.*3 failed/],
    ] as const) {
      await picker.getByRole('button', { name: range }).click()
      await page.getByRole('heading', { name: title }).waitFor()
      expect(await picker.getByRole('button', { name: range }).getAttribute('aria-pressed')).toBe('true')
      await poll(() => page.getByText(/^In the last /).textContent()).toMatch(totals)
      await expectChartSpansPlot(range)
      const legend = await page.locator('.chart .u-legend .u-label').allTextContents()
      expect(legend, range).toContain('failed')
      for (const label of legend) expect(MESSAGE_STATUSES, `${range} legend`).toContain(label)
      expect(await page.locator('.chart .u-legend').textContent()).not.toContain('--')
      if (range === '7d') await checkPage(page, 'console-overview-week')
    }
    await expectChartFollowsWindow()
    await expectOverviewClear('overview')
  })

  it('says what to do next when the overview has no sender queue, clear of the other sections', async () => {
    // The API always lists the default sender's queue: an answer without any is played here.
    const overviewRoute = (url: URL) => url.pathname === '/api/admin/overview'
    await page.route(overviewRoute, async (route) => {
      const response = await route.fetch()
      await route.fulfill({ response, json: { ...(await response.json()), backlog: [] } })
    })
    await page.reload()
    const backlog = page.getByRole('region', { name: 'Backlog per sender' })
    await poll(() => backlog.textContent()).toContain(
      'No sender queue yet: add a sender, and its queue shows here with what waits in it.',
    )
    expect(await backlog.getByRole('link', { name: 'add a sender' }).getAttribute('href')).toBe(
      '/console/senders',
    )
    expect(await backlog.getByRole('columnheader').count()).toBe(0)
    await expectOverviewClear('overview without a sender queue')
    await page.unroute(overviewRoute)
    // The meaning of a top error opens its row on the error codes page.
    await page.reload()
    const errors = page.getByRole('region', { name: 'Top errors (1 h)' })
    await errors.getByRole('link', { name: 'Undeliverable' }).click()
    await heading('Error codes').waitFor()
    expect(await page.locator('tr#code-131026').getAttribute('class')).toBe('target')
  })

  it('approves a pending key request with a tenant, and the approval e-mail arrives', async () => {
    const request = await requestKey(app, {
      clientName: 'Acme Brazil',
      email: 'ops@acme-br.test',
      tenantId: 'acme',
    })
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Key requests' }).click()
    await heading('Key requests').waitFor()
    const card = page.getByRole('article', { name: /Acme Brazil/ })
    await card.waitFor()
    await checkPage(page, 'console-key-requests')
    await poll(() => card.getByLabel('Tenant').inputValue()).toBe('acme')
    await card.getByLabel('Daily quota').fill('500')
    await card.getByRole('button', { name: 'Approve' }).click()
    await page.getByText('No pending request.').waitFor()
    const mail = await waitFor(() => smtp.messagesTo('ops@acme-br.test')[0], {
      what: 'the approval e-mail',
      timeoutMs: 15_000,
    })
    expect(mail.subject).toMatch(/approved/i)
    const [row] = await world.sql<{ status: string; tenant_id: string; daily_quota: number }[]>`
      select status, tenant_id, daily_quota from api_keys where id = ${request.id}`
    expect(row).toEqual({ status: 'approved', tenant_id: 'acme', daily_quota: 500 })
  })

  it('finds the key with its decision history, and its limits', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Keys' }).click()
    await heading('Keys').waitFor()
    await page.getByLabel('Client name, e-mail or prefix').fill('Acme Brazil')
    await page.getByRole('button', { name: 'Search' }).click()
    await page.getByRole('link', { name: 'Acme Brazil' }).click()
    await heading('Key').waitFor()
    const history = page.getByRole('region', { name: 'Decision history' })
    await poll(() => history.textContent()).toContain('pending → approved')
    await poll(() => page.getByLabel('Daily quota').inputValue()).toBe('500')
    await poll(() => page.locator('.facts').textContent()).toContain('0 accepted, 500 left')
    // Quiet hours in the page: saved with the limits, read back by the API as set, cleared when emptied.
    const limitsForm = page.getByRole('form', { name: 'Limits' })
    await limitsForm.getByLabel('From').fill('21:00')
    await limitsForm.getByLabel('Until').fill('08:00')
    await limitsForm.getByLabel("Zone when the recipient's is unknown").fill('America/Sao_Paulo')
    await limitsForm.getByRole('button', { name: 'Save limits' }).click()
    await poll(() => page.getByText('Limits saved.').count()).toBe(1)
    const keyId = page.url().split('/').pop() ?? ''
    // The key's whole id on its page, with a button that copies it.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl })
    expect(await page.locator('.facts').textContent()).toContain(keyId)
    await page.getByRole('button', { name: `Copy key id ${keyId}` }).click()
    await poll(() => page.evaluate('navigator.clipboard.readText()')).toBe(keyId)
    const quietHours = async () =>
      (await app.inject({ method: 'GET', url: `/api/admin/api-keys/${keyId}`, headers: asAdmin() })).json()
        .quietHours
    expect(await quietHours()).toEqual({ start: '21:00', end: '08:00', timeZone: 'America/Sao_Paulo' })
    // Half a pair is refused by the API, in words, and changes nothing.
    await limitsForm.getByLabel('Until').fill('')
    await limitsForm.getByRole('button', { name: 'Save limits' }).click()
    await poll(() => limitsForm.locator('..').getByRole('alert').textContent()).toMatch(/quietHours/)
    expect((await quietHours()).start).toBe('21:00')
    await limitsForm.getByLabel('From').fill('')
    await limitsForm.getByRole('button', { name: 'Save limits' }).click()
    await poll(quietHours).toBeNull()
    await checkPage(page, 'console-key')
    await go('/keys')
    await heading('Keys').waitFor()
    await page.getByRole('link', { name: 'Acme Brazil' }).waitFor()
    await checkPage(page, 'console-keys')
  })

  it('finds the failed message by phone, reads its failed attempt on the timeline, retries it and sees it sent', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Messages' }).click()
    await heading('Messages').waitFor()
    await page.getByLabel('Phone').fill(FAILING_PHONE)
    await page.getByRole('button', { name: 'Search', exact: true }).click()
    await poll(() =>
      page
        .getByRole('status')
        .filter({ hasText: /^(about )?\d+ messages?$/ })
        .textContent(),
    ).toMatch(/\b1 message\b/)
    await checkPage(page, 'console-messages')
    // The whole id (ids taken in one second share their first eight characters), the client's
    // name beside its key, and a button that copies the id.
    const row = page.getByRole('row').filter({ hasText: FAILING_PHONE })
    expect(await row.getByRole('cell').first().textContent()).toContain(failedId)
    expect(await row.getByRole('link', { name: 'Shop sending' }).isVisible()).toBe(true)
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl })
    await row.getByRole('button', { name: `Copy message id ${failedId}` }).click()
    await poll(() => page.evaluate('navigator.clipboard.readText()')).toBe(failedId)
    // …and the key's id, under its client's name.
    await row.getByRole('button', { name: `Copy key id ${senderKeyId}` }).click()
    await poll(() => page.evaluate('navigator.clipboard.readText()')).toBe(senderKeyId)
    // Its last error: the code, and under it what the code means in a few words, linked to its row
    // on the error codes page, the whole meaning on hover; clear of the cells beside it at any width.
    const meaning = row.getByRole('link', { name: 'Undeliverable' })
    const lastError = row.getByRole('cell').filter({ has: page.getByRole('link', { name: 'Undeliverable' }) })
    expect(await lastError.locator('code').textContent()).toBe('131026')
    expect(await meaning.getAttribute('href')).toBe('/console/error-codes#code-131026')
    expect(await meaning.getAttribute('title')).toMatch(/^Undeliverable: not a WhatsApp user/)
    for (const width of [910, 1280]) {
      await page.setViewportSize({ width, height: 900 })
      await expectNoOverlappingText(page, 'main', `the messages at ${width} px`)
      // The full ids' table scrolls in its own box: the page itself is no wider than the window.
      const pageWidth = 'document.documentElement.scrollWidth - document.documentElement.clientWidth'
      expect(await page.evaluate(pageWidth), `the page's overflow at ${width} px`).toBeLessThanOrEqual(0)
      // Its column as wide as its longest word, not a word broken over two lines.
      const lines = `document.querySelector('main td a[href$="#code-131026"]').getClientRects().length`
      expect(await page.evaluate(lines), `at ${width} px`).toBe(1)
    }
    await page.getByRole('link', { name: failedId }).click()
    await heading('Message').waitFor()
    // Times read in the viewer's zone, one format everywhere; the UTC instant on hover.
    const accepted = page.locator('.facts time').first()
    expect(await accepted.getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/)
    expect(Date.parse((await accepted.getAttribute('datetime')) ?? '')).not.toBeNaN()
    const timeline = page.getByRole('list', { name: 'Timeline' })
    // The code with what it means.
    await poll(() => timeline.textContent()).toMatch(
      /attempt failed.*131026.*Undeliverable: not a WhatsApp user/i,
    )
    expect(await page.getByRole('region', { name: 'Request' }).textContent()).toContain('Your order shipped')
    await checkPage(page, 'console-message-failed')
    await page.getByRole('button', { name: 'Retry message' }).click()
    // The page refreshes itself: no reload.
    await poll(() => timeline.textContent(), 20_000).toMatch(/retried by admin ana.*sent/is)
    await page.locator('.facts .badge-sent').waitFor()
    await checkPage(page, 'console-message-sent')
  })

  it('retries every failed message matching a search', async () => {
    await go(`/messages?phone=${encodeURIComponent(OUTAGE_PHONE)}&status=failed`)
    await heading('Messages').waitFor()
    await poll(() =>
      page
        .getByRole('status')
        .filter({ hasText: /^(about )?\d+ messages?$/ })
        .textContent(),
    ).toMatch(/\b2 messages/)
    // Searched by channel, none of them went by SMS; and a bulk retry (which takes no channel) is off.
    const search = page.getByRole('search', { name: 'Search messages' })
    await search.getByLabel('Channel').selectOption('sms')
    await search.getByRole('button', { name: 'Search' }).click()
    // None matches: the page says what to do next.
    await poll(() =>
      page.getByText('No message matches. Widen the time range or clear a filter.').isVisible(),
    ).toBe(true)
    expect(await page.getByRole('button', { name: 'Retry every failed message matching' }).isDisabled()).toBe(
      true,
    )
    await search.getByLabel('Channel').selectOption('whatsapp')
    await search.getByRole('button', { name: 'Search' }).click()
    await poll(() =>
      page
        .getByRole('status')
        .filter({ hasText: /^(about )?\d+ messages?$/ })
        .textContent(),
    ).toMatch(/\b2 messages/)
    await search.getByLabel('Channel').selectOption('')
    await search.getByRole('button', { name: 'Search' }).click()
    await poll(() =>
      page.getByRole('button', { name: 'Retry every failed message matching' }).isEnabled(),
    ).toBe(true)
    page.once('dialog', (dialog) => void dialog.accept())
    await page.getByRole('button', { name: 'Retry every failed message matching' }).click()
    await poll(() => page.getByText('2 messages retried.').isVisible()).toBe(true)
    for (const id of outageIds) await untilMessageStatus(app, senderKey, id, 'sent')
  })

  it('bounds the messages by a time range kept in the address: the last hour, day or week, or From and Until', async () => {
    const threeHoursAgo = new Date(Date.now() - 3 * 3_600_000).toISOString()
    await world.sql`
      insert into messages (id, api_key_id, type, phone, payload, status, attempts, last_error_code,
        last_error_message, accepted_at, updated_at)
      values (${randomUUID()}, ${senderKeyId}, 'text', ${EARLIER_PHONE},
        ${world.sql.json({ phone: EARLIER_PHONE, text: 'Earlier' })}, 'failed', 1, '131026', 'refused',
        ${threeHoursAgo}, ${threeHoursAgo})`
    await go(`/messages?phone=${encodeURIComponent(EARLIER_PHONE)}`)
    await heading('Messages').waitFor()
    const counted = () =>
      page
        .getByRole('status')
        .filter({ hasText: /^(about )?\d+ messages?$/ })
        .textContent()
    const none = () => page.getByText(/^No message matches/).isVisible()
    const address = () => new URL(page.url()).searchParams
    await poll(counted).toMatch(/\b1 message\b/)
    const picker = page.getByRole('group', { name: 'Time range' })
    const pressed = (name: string) => picker.getByRole('button', { name }).getAttribute('aria-pressed')
    expect(await pressed('Any time')).toBe('true')
    await picker.getByRole('button', { name: '1h' }).click()
    await poll(none).toBe(true)
    expect(address().get('range')).toBe('1h')
    expect(address().get('phone')).toBe(EARLIER_PHONE)
    expect(await pressed('1h')).toBe('true')
    await picker.getByRole('button', { name: '24h' }).click()
    await poll(counted).toMatch(/\b1 message\b/)
    // Kept in the address: a reload searches the same span, back from the new now.
    await page.reload()
    await heading('Messages').waitFor()
    await poll(counted).toMatch(/\b1 message\b/)
    expect(await pressed('24h')).toBe('true')
    await checkPage(page, 'console-messages-range')
    // A window of one's own: from two hours ago, which the message predates.
    const search = page.getByRole('search', { name: 'Search messages' })
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000 - new Date().getTimezoneOffset() * 60_000)
    await search.getByLabel('From').fill(twoHoursAgo.toISOString().slice(0, 16))
    await search.getByRole('button', { name: 'Search', exact: true }).click()
    await poll(none).toBe(true)
    expect(address().get('range')).toBeNull()
    expect(address().get('startDate')).not.toBeNull()
    expect(await pressed('24h')).toBe('false')
    expect(await pressed('Any time')).toBe('false')
    // Any time: no bound, and the From field emptied.
    await picker.getByRole('button', { name: 'Any time' }).click()
    await poll(counted).toMatch(/\b1 message\b/)
    expect(address().get('startDate')).toBeNull()
    expect(await search.getByLabel('From').inputValue()).toBe('')
  })

  it('pauses and resumes the messages queue with a reason, by keyboard', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Queues' }).click()
    await heading('Queues').waitFor()
    const pause = page.getByRole('form', { name: 'Pause messages', exact: true })
    await pause.getByLabel('Reason').fill('incident 42')
    await pause.getByLabel('Reason').press('Tab')
    await page.keyboard.press('Enter')
    const resume = page.getByRole('form', { name: 'Resume messages', exact: true })
    await resume.waitFor()
    await poll(() =>
      page
        .getByRole('row', { name: /^messages/ })
        .first()
        .textContent(),
    ).toContain('incident 42')
    await checkPage(page, 'console-queues-paused')
    await resume.getByLabel('Reason').fill('incident over')
    await resume.getByRole('button', { name: 'Resume messages' }).click()
    await page.getByRole('form', { name: 'Pause messages', exact: true }).waitFor()
    await poll(() =>
      page
        .getByRole('row', { name: /^messages/ })
        .first()
        .textContent(),
    ).toContain('running')
    // Audited under the admin's name, as through the API.
    const audit = await world.sql<{ actor: string; action: string; reason: string }[]>`
      select actor, action, details->>'reason' as reason from admin_audit_log
      where target_type = 'queue' and target_id = 'messages' order by id`
    expect(audit).toEqual([
      { actor: 'ana', action: 'queue.pause', reason: 'incident 42' },
      { actor: 'ana', action: 'queue.resume', reason: 'incident over' },
    ])
    await checkPage(page, 'console-queues')
  })

  it('lists the senders, and a sender’s page', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Senders' }).click()
    await heading('Senders').waitFor()
    await page.getByLabel('Display name').fill('Acme Chile')
    await page.getByLabel('Phone number id (Meta)').fill('1065403522000')
    await page.getByLabel('Access token').fill('EAAG-acme-chile-token-1')
    await page.getByRole('button', { name: 'Add sender' }).click()
    await heading('Sender').waitFor()
    await poll(() => page.locator('.facts').first().textContent()).toContain('…en-1')
    await page.getByLabel('New access token').fill('EAAG-acme-chile-token-2')
    await page.getByRole('button', { name: 'Rotate token' }).click()
    await poll(() => page.locator('.facts').first().textContent()).toContain('…en-2')
    // Its settings in the page, not by curl: saved, and read back by the API as set.
    const settings = page.getByRole('form', { name: 'Settings' })
    await settings.getByLabel('WhatsApp Business Account id').fill(WABA_ID)
    await settings.getByLabel('24-hour window').selectOption('enforce')
    await settings.getByLabel('At most').fill('2')
    await settings.getByLabel('messages in hours').fill('24')
    await settings.getByLabel('Opt out').fill('PARAR, SAIR')
    await settings.getByLabel('Opt back in').fill('VOLTAR')
    await settings.getByLabel('After an opt-out').fill('Você não receberá mais mensagens.')
    await settings.getByLabel('Business portfolio id').fill('5550001')
    await settings.getByLabel('Past the limit').selectOption('refuse')
    await settings.getByLabel('Limit set by an admin').fill('2000')
    await settings.getByLabel('SMS text').fill('Your code: see the app')
    await settings.getByLabel('Also when not delivered within seconds').fill('120')
    await settings.getByRole('button', { name: 'Save settings' }).click()
    await poll(() => page.getByText('Settings saved.').count()).toBe(1)
    const senderId = page.url().split('/').pop() ?? ''
    const read = await app.inject({
      method: 'GET',
      url: `/api/admin/senders/${senderId}`,
      headers: asAdmin(),
    })
    expect(read.json()).toMatchObject({
      wabaId: WABA_ID,
      serviceWindowPolicy: 'enforce',
      marketingCap: { count: 2, hours: 24 },
      // Keywords are kept folded, as replies are matched.
      consentKeywords: { optOut: ['parar', 'sair'], optIn: ['voltar'] },
      consentConfirmation: { optOut: 'Você não receberá mais mensagens.' },
      inboundContentRetention: 'retain',
      businessId: '5550001',
      messagingLimitPolicy: 'refuse',
      messagingLimitOverride: 2000,
      messagingLimit: { limit: 2000, source: 'admin', portfolio: 'business:5550001' },
      defaultFallback: { sms: { text: 'Your code: see the app' }, afterSeconds: 120 },
    })
    // Emptied, a setting is cleared: no cap.
    await settings.getByLabel('At most').fill('')
    await settings.getByLabel('messages in hours').fill('')
    await settings.getByLabel('Limit set by an admin').fill('')
    await settings.getByRole('button', { name: 'Save settings' }).click()
    await poll(async () => {
      const again = await app.inject({
        method: 'GET',
        url: `/api/admin/senders/${senderId}`,
        headers: asAdmin(),
      })
      return again.json().marketingCap
    }).toBeNull()
    // …and the rest as they were: the form shows what the sender holds, and saves it back.
    const after = await app.inject({
      method: 'GET',
      url: `/api/admin/senders/${senderId}`,
      headers: asAdmin(),
    })
    expect(after.json()).toMatchObject({
      serviceWindowPolicy: 'enforce',
      wabaId: WABA_ID,
      messagingLimitPolicy: 'refuse',
      messagingLimitOverride: null,
      defaultFallback: { sms: { text: 'Your code: see the app' }, afterSeconds: 120 },
    })
    await page.reload()
    expect(await page.getByRole('form', { name: 'Settings' }).getByLabel('24-hour window').inputValue()).toBe(
      'enforce',
    )
    await checkPage(page, 'console-sender')
    await go('/senders')
    await page.getByRole('link', { name: 'Acme Chile' }).waitFor()
    await checkPage(page, 'console-senders')
  })

  it('syncs a sender’s templates from its page, and previews each filled with its examples', async () => {
    await page.getByRole('link', { name: 'Acme Chile' }).click()
    await heading('Sender').waitFor()
    const templates = page.getByRole('region', { name: 'Templates' })
    // None yet: the page says how to get them.
    await poll(() => templates.textContent()).toContain(
      "No template yet: Sync templates from Meta reads this sender's catalog",
    )
    fake.templates.set(WABA_ID, [ORDER_UPDATE, REMINDER])
    await templates.getByRole('button', { name: 'Sync templates from Meta' }).click()
    await poll(() => templates.getByRole('status').textContent()).toBe(
      'Templates synced: 2 added, 0 changed, 0 removed; 2 in all.',
    )
    const table = templates.getByRole('table', { name: 'Templates' })
    const row = (name: string) => table.getByRole('row').filter({ hasText: name })
    // Filled with Meta's examples, header and footer as the recipient reads them.
    await poll(() => row('order_update').textContent()).toContain(
      'Order 4921Hello Ana, your order 4921 is on its way.Acme Store',
    )
    // No example: each variable named.
    expect(await row('appointment_reminder').textContent()).toContain('Hi [first_name], see you on [date].')
    await checkPage(page, 'console-sender-templates')
    // Meta's catalog changes: one paused, one gone, one new. Synced again, the page shows it at once.
    fake.templates.set(WABA_ID, [{ ...ORDER_UPDATE, status: 'PAUSED' }, FEEDBACK])
    await templates.getByRole('button', { name: 'Sync templates from Meta' }).click()
    await poll(() => templates.getByRole('status').textContent()).toBe(
      'Templates synced: 1 added, 1 changed, 1 removed; 2 in all.',
    )
    await poll(() => row('appointment_reminder').count()).toBe(0)
    expect(await row('order_update').locator('.badge').textContent()).toBe('paused')
    expect(await row('visit_feedback').textContent()).toMatch(
      /How was your visit to Acme Centro\?.*Buttons: Great/,
    )
  })

  it('ends every session of another admin, audited', async () => {
    const signIn = await app.inject({
      method: 'POST',
      url: '/api/admin/session',
      payload: { name: 'ops', token: ADMIN.ops },
    })
    const cookie = String(signIn.headers['set-cookie']).split(';')[0] as string
    const opsReads = () => app.inject({ method: 'GET', url: '/api/admin/session', headers: { cookie } })
    expect((await opsReads()).statusCode).toBe(200)

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sessions' }).click()
    await heading('Sessions').waitFor()
    const form = page.getByRole('form', { name: 'End an admin’s sessions' })
    await form.getByLabel('Admin name').fill('ops')
    await form.getByRole('button', { name: 'End all sessions' }).click()
    await poll(() => form.getByRole('status').textContent()).toBe('Ended 1 session of ops.')
    expect((await opsReads()).statusCode).toBe(401)
    const audit = await world.sql`
      select actor, details from admin_audit_log where action = 'sessions.revoke' and target_id = 'ops'`
    expect(audit).toEqual([{ actor: 'ana', details: { ended: 1 } }])
    await checkPage(page, 'console-sessions')
  })

  it('signs out: the session ends, and the pages ask to sign in again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click()
    await heading('Dispatch console').waitFor()
    await go('/messages')
    await heading('Dispatch console').waitFor()
    expect(complaints).toEqual([])
  })
})
