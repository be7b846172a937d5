import { randomBytes } from 'node:crypto'
import type { Campaign } from '@dispatch/contracts'
import { type FakeWhatsApp, startFakeWhatsApp } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import type { Browser, Page, Route } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  buildTestApp,
  createWorld,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { keyOf, syncedSender } from '../templates/setup.ts'
import { browserBinary, checkPage, launchBrowser, openPage, poll } from './browser.ts'

/**
 * A key holder's campaigns in real Chromium: creates one from its approved template, chooses a CSV
 * (its first rows previewed with the template's body), uploads it, starts it and follows it to
 * completed; another, scheduled, is paused, resumed and canceled from its page. Then an admin, in
 * the console, finds both among every key's campaigns and pauses, resumes and cancels a third. Every
 * page checked with axe-core and walked with the keyboard.
 */

if (browserBinary.missing)
  console.warn(`portal campaigns: the browser tests are skipped: ${browserBinary.missing}`)

const SECRETS_KEY = randomBytes(32).toString('base64')
const SCOPES = ['send:template', 'manage:campaigns', 'read:messages']
const UPLOAD_ROUTE = { method: 'PUT' as const, url: '/api/third-party/campaigns/:campaignId/audience' }

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let browser: Browser
let baseUrl: string
let page: Page
let complaints: string[]
let key: { id: string; key: string }

let phones = 0
const newPhone = () => `+55218${String(Date.now()).slice(-6)}${String(phones++).padStart(3, '0')}`

/** The December campaign's audience; the platform answers its last recipient 131026 (not on WhatsApp). */
const audience = Array.from({ length: 25 }, newPhone)
const UNDELIVERABLE = audience[24] as string

/**
 * The audience as an upload leaves it, written in SQL (as apps/api/test/campaigns/campaigns.test.ts
 * does): the page's own upload, intercepted, lands here while the API has no upload route yet.
 * A row without an E.164 phone is skipped as `invalid_recipient`; the CSV's header is line 1.
 */
async function loadAudience(campaignId: string, csv: string) {
  const [header, ...lines] = csv.trim().split('\n')
  const names = (header ?? '').split(',')
  const rows = lines.map((text, i) => {
    const fields = text.split(',')
    const variables = Object.fromEntries(names.slice(1).map((name, at) => [name, fields[at + 1] ?? '']))
    return { line: i + 2, phone: fields[0] ?? '', variables, text }
  })
  const taken = rows.filter((r) => /^\+[1-9]\d{7,14}$/.test(r.phone))
  const skipped = rows.filter((r) => !taken.includes(r))
  if (taken.length > 0) {
    await world.sql`insert into campaign_recipients ${world.sql(
      taken.map((r) => ({
        campaign_id: campaignId,
        line: r.line,
        phone: r.phone,
        variables: JSON.stringify(r.variables),
        state: 'pending',
      })),
    )}`
  }
  for (const s of skipped) {
    await world.sql`insert into campaign_recipients (campaign_id, line, state, reason, detail, raw)
      values (${campaignId}, ${s.line}, 'skipped', 'invalid_recipient', 'phone is not E.164', ${s.text})`
  }
  const audience = {
    rows: rows.length,
    taken: taken.length,
    skipped: skipped.length,
    skippedByReason: skipped.length > 0 ? { invalid_recipient: skipped.length } : {},
    format: 'csv',
    uploadedAt: new Date().toISOString(),
  }
  await world.sql`update campaigns set status = 'ready', audience = ${world.sql.json(audience)} where id = ${campaignId}`
  return audience
}

/** Until the API has its upload route, the page's PUT is answered here, as the route will answer it. */
async function answerUpload(route: Route) {
  const request = route.request()
  const campaignId = /campaigns\/([^/]+)\/audience/.exec(request.url())?.[1] ?? ''
  expect(request.method()).toBe('PUT')
  expect(request.headers()['content-type']).toBe('text/csv')
  expect(request.headers()['x-csrf-token']).toBeTruthy()
  const audience = await loadAudience(campaignId, request.postDataBuffer()?.toString('utf8') ?? '')
  await route.fulfill({ json: { campaignId, status: 'ready', audience } })
}

/** A campaign of `apiKey` starting in an hour, its two rows in, left `ready`. */
async function readyNextWeek(apiKey: string, name: string) {
  const created = await app.inject({
    method: 'POST',
    url: '/api/third-party/campaigns',
    headers: { 'x-api-key': apiKey },
    payload: {
      name,
      template: { templateId: 'appointment_reminder', language: 'en_US' },
      startAt: new Date(Date.now() + 3_600_000).toISOString(),
    },
  })
  expect(created.statusCode, created.body).toBe(201)
  const campaign = created.json<Campaign>()
  await loadAudience(
    campaign.id,
    ['phone,first_name,date', `${newPhone()},Ana,Monday`, `${newPhone()},Bia,Tuesday`].join('\n'),
  )
  return campaign
}

describe.skipIf(browserBinary.missing)('the portal’s campaigns, in a browser', () => {
  beforeAll(async () => {
    world = await createWorld()
    fake = await startFakeWhatsApp({ undeliverable: (to) => `+${to}` === UNDELIVERABLE })
    const env = { SECRETS_KEY, WHATSAPP_API_URL: fake.url }
    app = await buildTestApp(world, {
      ...env,
      CAMPAIGN_WINDOW: '10',
      CAMPAIGN_FEED_INTERVAL_MS: '200',
      CAMPAIGN_PROGRESS_SECONDS: '1',
    })
    worker = await startTestWorker(world, {
      ...env,
      WHATSAPP_ACCESS_TOKEN: 'default-token',
      WHATSAPP_PHONE_NUMBER_ID: '106540352242926',
      ADMISSION_INTERVAL_MS: '20',
      TEMPLATE_SYNC_INTERVAL_MS: '0',
    })
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
    const sender = await syncedSender(app, fake)
    key = await keyOf(app, sender.id, SCOPES)
    browser = await launchBrowser()
    ;({ page, complaints } = await openPage(browser))
    if (!app.hasRoute(UPLOAD_ROUTE)) await page.route('**/api/third-party/campaigns/*/audience', answerUpload)
    await page.goto(`${baseUrl}/portal`)
    await page.getByLabel('API key').fill(key.key)
    await page.getByLabel('API key').press('Enter')
    await heading('Messages').waitFor()
  })
  afterAll(async () => {
    await browser?.close()
    await worker?.close()
    await app?.close()
    await fake?.close()
    await world?.close()
  })

  const heading = (name: string | RegExp) => page.getByRole('heading', { level: 1, name })
  const badge = () => page.locator('.facts .badge')

  it('lists no campaign, then creates one from an approved template', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Campaigns' }).click()
    await heading('Campaigns').waitFor()
    await page.getByText('No campaign yet').waitFor()
    await checkPage(page, 'portal-campaigns-empty')
    await page.getByRole('link', { name: 'New campaign' }).click()
    await heading('New campaign').waitFor()
    await page.getByLabel('Name').fill('December promotion')
    await page.getByLabel('Template').selectOption({ label: 'order_shipped (pt_BR, utility)' })
    // The template's body, what each row gives, and the fields every recipient shares.
    await page.getByText('Each row of the audience gives: 1, 2.').waitFor()
    expect(await page.getByRole('form').textContent()).toContain('Olá {{1}}, seu pedido {{2}} foi enviado.')
    await page.getByLabel(/Header image: media id/).fill('media-123')
    await page.getByLabel(/Button 1: the end of its URL/).fill('track/BR-1042')
    await checkPage(page, 'portal-campaign-new')
    await page.getByRole('button', { name: 'Create, then upload the audience' }).click()
    await heading('Campaign December promotion').waitFor()
    expect(await badge().textContent()).toBe('draft')
  })

  // The third row has no phone: the upload skips it (line 4; the header is line 1).
  const rows = audience.map((p, i) => `${p},Cliente ${i + 1},BR-${i + 1}`)
  const csv = ['phone,1,2', ...rows.slice(0, 2), 'not-a-phone,Ana,BR-0', ...rows.slice(2)].join('\n')

  it('previews the first rows with the template, uploads the file and shows what it took', async () => {
    await page.getByLabel('Audience file (CSV or NDJSON)').setInputFiles({
      name: 'december.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from(csv),
    })
    const preview = page.getByRole('table', { name: 'The first rows, as their messages will read' })
    await poll(() => preview.textContent()).toContain('Olá Cliente 1, seu pedido BR-1 foi enviado.')
    expect(await preview.getByRole('row').count()).toBe(6) // a header and five rows
    await page.getByRole('button', { name: 'Upload' }).click()
    const summary = page.getByRole('status', { name: 'Uploaded audience' })
    await poll(() => summary.textContent()).toContain('25 recipients taken, 1 skipped, of 26 rows (CSV)')
    expect(await summary.textContent()).toContain('invalid recipient 1')
    // What the upload made of each previewed line.
    await poll(() => preview.getByRole('row', { name: /^4 not-a-phone/ }).textContent()).toContain(
      'skipped: invalid recipient',
    )
    expect(await preview.getByRole('row', { name: /^2 / }).textContent()).toMatch(/taken$/)
    const skipped = page.getByRole('link', { name: 'Download the skipped lines (CSV)' })
    const skippedHref = await skipped.getAttribute('href')
    expect(skippedHref).toMatch(/\/api\/third-party\/campaigns\/[0-9a-f-]{36}\/skipped$/)
    if (app.hasRoute(UPLOAD_ROUTE)) {
      // The report comes with the upload route; until then the audience is written in SQL.
      const report = await page.request.get(`${baseUrl}${skippedHref}`)
      expect(report.status()).toBe(200)
      expect(await report.text()).toContain('not-a-phone,Ana,BR-0')
    }
    await poll(() => badge().textContent()).toBe('ready')
    await checkPage(page, 'portal-campaign-ready')
  })

  it('starts it and follows its progress to completed', async () => {
    await page.getByRole('button', { name: 'Start', exact: true }).click()
    await poll(() => badge().textContent()).toMatch(/running|completed/)
    // Fed ten at a time, every 200 ms: the page reads the counts as they move.
    const counts = page.getByRole('table', { name: 'Recipients by state' })
    await poll(() => counts.getByRole('row', { name: /^sent/ }).textContent(), 30_000).toBe('sent24')
    await poll(() => badge().textContent(), 30_000).toBe('completed')
    expect(await counts.getByRole('row', { name: /^failed/ }).textContent()).toBe('failed1')
    expect(await counts.getByRole('row', { name: /^skipped/ }).textContent()).toBe('skipped1')
    expect(await page.getByRole('region', { name: 'Recipients by state' }).textContent()).toMatch(
      /Replied\s*0.*Opted out since\s*0.*Billable messages\s*\d+/s,
    )
    expect(await page.locator('.facts').first().textContent()).toContain('24 of 25 (96 %)')
    // The chart, drawn from the readings the page took.
    const chart = page.getByRole('img', { name: /^Progress: 24 sent, 1 failed/ })
    await chart.locator('canvas').waitFor()
    expect(
      await page.getByText(/From its start; read every 3 seconds while it runs\. \d+ points\./).count(),
    ).toBe(1)
    // The failure by its code, what the code means in a few words, linking to the whole of it.
    const failures = page.getByRole('region', { name: 'Failures by error code' })
    const failure = failures.getByRole('row', { name: /^131026/ })
    expect(await failure.textContent()).toBe('1310261Undeliverable')
    const meaning = failure.getByRole('link', { name: 'Undeliverable' })
    expect(await meaning.getAttribute('href')).toBe('/portal/error-codes#code-131026')
    // Every taken row went out once.
    for (const phone of audience)
      expect(fake.requests.filter((r) => r.body.to === phone.slice(1))).toHaveLength(1)
    await checkPage(page, 'portal-campaign-completed')
    await meaning.click()
    await heading('Error codes').waitFor()
    expect(await page.locator('tr#code-131026').getAttribute('class')).toBe('target')
    await page.goBack()
    await heading('Campaign December promotion').waitFor()
  })

  it('lists its recipients by state, a page at a time, and exports them', async () => {
    const recipients = page.getByRole('region', { name: 'Recipients', exact: true })
    const table = recipients.getByRole('table', { name: 'Recipients', exact: true })
    // 26 rows, 25 a page: the second holds the last line, and the way back.
    await poll(() => table.getByRole('row').count()).toBe(26)
    // Read again as the counts moved: each row's state and its message.
    await poll(() => table.locator('.badge-sent').count()).toBe(24)
    expect(await table.locator('.badge-skipped').count()).toBe(1)
    await table.getByRole('row').nth(1).getByRole('link').click()
    await heading('Message').waitFor()
    await page.goBack()
    await heading('Campaign December promotion').waitFor()
    await poll(() => table.getByRole('row').count()).toBe(26)
    await recipients.getByRole('button', { name: 'Next page' }).click()
    await poll(() => table.getByRole('row').count()).toBe(2)
    // The last line, not on WhatsApp: its code, and what it means linked to the error codes page.
    const last = table.getByRole('row', { name: /^27 / })
    expect(await last.textContent()).toMatch(/^27\+\d+failed131026Undeliverable/)
    expect(await last.getByRole('link', { name: 'Undeliverable' }).getAttribute('href')).toBe(
      '/portal/error-codes#code-131026',
    )
    await recipients.getByRole('button', { name: 'Previous page' }).click()
    await poll(() => table.getByRole('row').count()).toBe(26)
    await recipients.getByLabel('State').selectOption('skipped')
    await poll(() => table.getByRole('row').count()).toBe(2)
    expect(await table.textContent()).toContain('invalid recipient')
    await recipients.getByLabel('State').selectOption('')
    const csvHref = await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href')
    const exported = await page.request.get(`${baseUrl}${csvHref}`)
    expect(exported.status()).toBe(200)
    const lines = (await exported.text()).trim().split('\n')
    expect(lines).toHaveLength(27)
    expect(lines.filter((line) => line.includes(',sent,'))).toHaveLength(24)
    expect(lines.filter((line) => line.includes(',failed,'))).toEqual([expect.stringMatching(/,131026$/)])
    const ndjsonHref = await page.getByRole('link', { name: 'Export NDJSON' }).getAttribute('href')
    expect(ndjsonHref).toMatch(/export\?format=ndjson$/)
  })

  it('shows the campaign in the list with its progress', async () => {
    await page.getByRole('link', { name: 'All campaigns' }).click()
    await heading('Campaigns').waitFor()
    const row = page.getByRole('row', { name: /December promotion/ })
    await poll(() => row.textContent()).toContain('24 of 25 (96 %)')
    expect(await row.textContent()).toContain('completed')
    await checkPage(page, 'portal-campaigns')
  })

  it('pauses, resumes and cancels a scheduled campaign, asking before it cancels', async () => {
    const campaign = await readyNextWeek(key.key, 'Next week')
    await page.goto(`${baseUrl}/portal/campaigns/${campaign.id}`)
    await heading('Campaign Next week').waitFor()
    await page.getByRole('button', { name: 'Start at its start time' }).click()
    await poll(() => badge().textContent()).toBe('scheduled')
    await page.getByRole('button', { name: 'Pause' }).click()
    await poll(() => badge().textContent()).toBe('paused')
    await page.getByRole('status').filter({ hasText: 'Paused: no more recipients are fed' }).waitFor()
    await checkPage(page, 'portal-campaign-paused')
    await page.getByRole('button', { name: 'Resume' }).click()
    await poll(() => badge().textContent()).toBe('scheduled')
    // Cancel asks first; "Keep it" keeps it.
    await page.getByRole('button', { name: 'Cancel campaign' }).click()
    const confirm = page.getByRole('group', { name: 'Cancel “Next week”?' })
    await checkPage(page, 'portal-campaign-confirm-cancel')
    await confirm.getByRole('button', { name: 'Keep it' }).click()
    expect(await confirm.count()).toBe(0)
    expect(await badge().textContent()).toBe('scheduled')
    await page.getByRole('button', { name: 'Cancel campaign' }).click()
    await confirm.getByRole('button', { name: 'Yes, cancel the campaign' }).click()
    await poll(() => badge().textContent()).toBe('canceled')
    const counts = page.getByRole('table', { name: 'Recipients by state' })
    await poll(() => counts.getByRole('row', { name: /^canceled/ }).textContent()).toBe('canceled2')
    expect(await page.getByRole('button', { name: /Pause|Resume|Cancel campaign/ }).count()).toBe(0)
    const read = await app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${campaign.id}`,
      headers: { 'x-api-key': key.key },
    })
    expect(read.json<Campaign>().status).toBe('canceled')
  })

  it('shows the sender’s messaging limit beside the campaign', async () => {
    const limit = page.getByRole('region', { name: 'Messaging limit' })
    await poll(() => limit.textContent()).toMatch(/Limit.*Reached.*Room frees/s)
    expect(complaints).toEqual([])
  })
  it('shows an admin every key’s campaigns in the console, and lets it pause, resume and cancel one', async () => {
    const campaign = await readyNextWeek(key.key, 'Board meeting')
    const started = await app.inject({
      method: 'POST',
      url: `/api/third-party/campaigns/${campaign.id}/start`,
      headers: { 'x-api-key': key.key },
    })
    expect(started.json<Campaign>().status).toBe('scheduled')
    const { page: admin } = await openPage(browser)
    await admin.goto(`${baseUrl}/console`)
    await admin.getByLabel('Admin name').fill('ana')
    await admin.getByLabel('Admin token').fill(ADMIN.ana)
    await admin.getByLabel('Admin token').press('Enter')
    await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Campaigns' }).click()
    await admin.getByRole('heading', { level: 1, name: 'Campaigns' }).waitFor()
    const table = admin.getByRole('table', { name: 'Campaigns' })
    await poll(() => table.getByRole('row').count()).toBe(4) // a header and three campaigns
    expect(await table.textContent()).toContain(key.id)
    // Each key by its client's name, beside its whole id and a button that copies it.
    const boardRow = table.getByRole('row').filter({ hasText: 'Board meeting' })
    expect(await boardRow.getByRole('link', { name: 'Acme Notifications' }).getAttribute('href')).toBe(
      `/console/keys/${key.id}`,
    )
    // Each sender by its name, linked to its page.
    await poll(() =>
      boardRow
        .getByRole('link', { name: 'Checked sender' })
        .getAttribute('href')
        .catch(() => null),
    ).toMatch(/^\/console\/senders\/[0-9a-f-]{36}$/)
    await admin.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl })
    await boardRow.getByRole('button', { name: `Copy key id ${key.id}` }).click()
    await poll(() => admin.evaluate('navigator.clipboard.readText()')).toBe(key.id)
    await admin.getByLabel('Status').selectOption('completed')
    await poll(() => table.getByRole('row').count()).toBe(2)
    expect(await table.textContent()).toContain('December promotion')
    await checkPage(admin, 'console-campaigns')
    // A campaign's failures in the console too: the code, and its meaning linked to the console's page.
    await table.getByRole('link', { name: 'December promotion' }).click()
    await admin.getByRole('heading', { level: 1, name: 'Campaign December promotion' }).waitFor()
    const failure = admin
      .getByRole('region', { name: 'Failures by error code' })
      .getByRole('row', { name: /^131026/ })
    await poll(() => failure.textContent()).toBe('1310261Undeliverable')
    expect(await failure.getByRole('link', { name: 'Undeliverable' }).getAttribute('href')).toBe(
      '/console/error-codes#code-131026',
    )
    await admin.goBack()
    await admin.getByRole('heading', { level: 1, name: 'Campaigns' }).waitFor()
    await admin.getByLabel('Status').selectOption('scheduled')
    await table.getByRole('link', { name: 'Board meeting' }).click()
    await admin.getByRole('heading', { level: 1, name: 'Campaign Board meeting' }).waitFor()
    const state = admin.locator('.facts .badge')
    const facts = admin.locator('.facts').first()
    await poll(() => facts.textContent()).toMatch(new RegExp(`Acme Notifications\\s*${key.id}`))
    expect(await facts.getByRole('button', { name: `Copy key id ${key.id}` }).isVisible()).toBe(true)
    // The key's own steps are not the admin's: no upload, no start, no messaging limit here.
    expect(await admin.getByRole('region', { name: 'Audience' }).count()).toBe(0)
    expect(await admin.getByRole('region', { name: 'Messaging limit' }).count()).toBe(0)
    expect(await admin.getByRole('link', { name: 'Export CSV' }).getAttribute('href')).toBe(
      `/api/admin/campaigns/${campaign.id}/export?format=csv`,
    )
    await admin.getByRole('button', { name: 'Pause' }).click()
    await poll(() => state.textContent()).toBe('paused')
    await checkPage(admin, 'console-campaign')
    await admin.getByRole('button', { name: 'Resume' }).click()
    await poll(() => state.textContent()).toBe('scheduled')
    await admin.getByRole('button', { name: 'Cancel campaign' }).click()
    await admin.getByRole('button', { name: 'Yes, cancel the campaign' }).click()
    await poll(() => state.textContent()).toBe('canceled')
    // Each change audited under the admin's name.
    const audit = await world.sql<{ action: string }[]>`
      select action from admin_audit_log where target_id = ${campaign.id} and actor = 'ana' order by id`
    expect(audit.map((row) => row.action)).toEqual(['campaign.pause', 'campaign.resume', 'campaign.cancel'])
    // The campaign's sender, and its portfolio's messaging limit.
    await admin.getByRole('link', { name: campaign.senderId }).click()
    const limit = admin.getByRole('region', { name: 'Messaging limit' })
    await poll(() => limit.textContent()).toMatch(/Portfolio.*Limit.*Reached.*Room frees/s)
    await checkPage(admin, 'console-sender-messaging-limit')
    await admin.context().close()
  })
})
