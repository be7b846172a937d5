import { randomBytes } from 'node:crypto'
import type { AdminMessageTimeline, SenderView } from '@dispatch/contracts'
import { waitFor } from '@dispatch/testing'
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
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { browserBinary, checkPage, launchBrowser, openPage, poll } from './browser.ts'

/**
 * A message a pool's worker moved off a fallen number (docs/sender-pools.md): its console page
 * says the move (from which number to which, why and when) and its timeline lists it.
 */

let world: TestWorld
let app: TestApp
let baseUrl: string
/** Two numbers of one business, the move's from and to. */
const ids: string[] = []

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { SECRETS_KEY: randomBytes(32).toString('base64') })
  for (const [n, name] of ['Santiago 1', 'Santiago 2'].entries()) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/admin/senders',
      headers: asAdmin(),
      payload: {
        phoneNumberId: `3100${Date.now()}${n}`,
        displayName: name,
        accessToken: `EAAG${randomBytes(24).toString('base64url')}`,
        businessId: '4400045',
      },
    })
    expect(res.statusCode, res.body).toBe(201)
    ids.push(res.json<SenderView>().id)
  }
  baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

if (browserBinary.missing) console.warn(`console: the browser tests are skipped: ${browserBinary.missing}`)

describe.skipIf(browserBinary.missing)("a moved message's page, in a browser", () => {
  let browser: Browser
  let page: Page
  let complaints: string[]
  beforeAll(async () => {
    browser = await launchBrowser()
    ;({ page, complaints } = await openPage(browser))
  })
  afterAll(async () => {
    await browser?.close()
  })

  it('says from which number to which, why and when, and on its timeline', async () => {
    const key = await activeKey(app, { scopes: SEND_SCOPES })
    const res = await send(app, 'send-text', key.key, {
      phone: '+56912340001',
      text: 'later',
      sendAt: new Date(Date.now() + 3_600_000).toISOString(),
    })
    expect(res.statusCode, res.body).toBe(202)
    const id = res.json<{ messageId: string }>().messageId
    await waitFor(
      async () =>
        (await app.inject({ method: 'GET', url: `/api/admin/messages/${id}/timeline`, headers: asAdmin() }))
          .statusCode === 200 || undefined,
      { what: 'the scheduled message recorded' },
    )
    // The move as a pool's worker records it (sender-pools.test.ts moves one end to end).
    const at = new Date()
    await world.sql`insert into message_attempts (message_id, attempt, outcome, error_code, from_sender_id, to_sender_id, created_at)
      values (${id}, 0, 'sender_changed', 'quality_red', ${ids[1] as string}, ${ids[0] as string}, ${at})`
    const timeline = await app.inject({
      method: 'GET',
      url: `/api/admin/messages/${id}/timeline`,
      headers: asAdmin(),
    })
    expect(timeline.json<AdminMessageTimeline>().message.senderChanged).toEqual({
      from: ids[1],
      to: ids[0],
      at: at.toISOString(),
      reason: 'quality_red',
    })

    await page.goto(`${baseUrl}/console`)
    await page.getByLabel('Admin name').fill('ana')
    await page.getByLabel('Admin token').fill(ADMIN.ana)
    await page.getByLabel('Admin token').press('Enter')
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
    await page.goto(`${baseUrl}/console/messages/${id}`)
    await page.getByRole('heading', { level: 1, name: 'Message' }).waitFor()
    const changed = page
      .locator('.facts dt')
      .filter({ hasText: /^Sender changed$/ })
      .locator('xpath=following-sibling::dd[1]')
    await poll(() => changed.textContent()).toMatch(new RegExp(`^${ids[1]} → ${ids[0]}: its quality RED, `))
    expect(await changed.locator('time').getAttribute('datetime')).toBe(at.toISOString())
    await poll(() => page.getByRole('list', { name: 'Timeline' }).textContent()).toMatch(
      new RegExp(`sender changed.*Moved from sender ${ids[1]} to ${ids[0]}`, 's'),
    )
    await checkPage(page, 'console-message-sender-changed')
    expect(complaints).toEqual([])
  })
})
