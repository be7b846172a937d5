import { randomBytes } from 'node:crypto'
import type { SenderPoolList, SenderView } from '@dispatch/contracts'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN, asAdmin, buildTestApp, createWorld, type TestApp, type TestWorld } from '../helpers.ts'
import { browserBinary, checkPage, launchBrowser, openPage, poll } from './browser.ts'

/**
 * The console's sender pools page (issue 44): each pool with its members in order and whether each
 * is in rotation, and why not. Its data comes through `GET /api/admin/sender-pools` with the
 * console's session; the page itself is driven in Chromium.
 */

let world: TestWorld
let app: TestApp
let baseUrl: string

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { SECRETS_KEY: randomBytes(32).toString('base64') })
  const ids: string[] = []
  for (const [n, name] of ['Santiago 1', 'Santiago 2'].entries()) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/admin/senders',
      headers: asAdmin(),
      payload: {
        phoneNumberId: `3000${Date.now()}${n}`,
        displayName: name,
        accessToken: `EAAG${randomBytes(24).toString('base64url')}`,
        businessId: '4400044',
      },
    })
    expect(res.statusCode, res.body).toBe(201)
    ids.push(res.json<SenderView>().id)
  }
  const pool = await app.inject({
    method: 'POST',
    url: '/api/admin/sender-pools',
    headers: asAdmin(),
    payload: { name: 'Chile support', members: ids.map((senderId, i) => ({ senderId, weight: i + 1 })) },
  })
  expect(pool.statusCode, pool.body).toBe(201)
  await world.sql`update senders set quality_rating = 'RED' where id = ${ids[1] as string}`
  baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

describe("the page's data", () => {
  it("answers the console's session, and says which member is out of rotation", async () => {
    const signIn = await app.inject({
      method: 'POST',
      url: '/api/admin/session',
      payload: { name: 'ops', token: ADMIN.ops },
    })
    expect(signIn.statusCode, signIn.body).toBe(201)
    const cookie = String(([] as string[]).concat(signIn.headers['set-cookie'] ?? [])[0]).split(
      ';',
    )[0] as string
    const res = await app.inject({
      method: 'GET',
      url: '/api/admin/sender-pools?take=10',
      headers: { cookie },
    })
    expect(res.statusCode, res.body).toBe(200)
    const [pool] = res.json<SenderPoolList>().data
    expect(pool?.members.map((m) => [m.displayName, m.weight, m.outOfRotation])).toEqual([
      ['Santiago 1', 1, null],
      ['Santiago 2', 2, 'quality_red'],
    ])
  })
})

if (browserBinary.missing) console.warn(`console: the browser tests are skipped: ${browserBinary.missing}`)

describe.skipIf(browserBinary.missing)('the sender pools page, in a browser', () => {
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

  it('lists each pool with its members, in order, and which is out of rotation and why', async () => {
    await page.goto(`${baseUrl}/console`)
    await page.getByLabel('Admin name').fill('ana')
    await page.getByLabel('Admin token').fill(ADMIN.ana)
    await page.getByLabel('Admin token').press('Enter')
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sender pools' }).click()
    await page.getByRole('heading', { level: 1, name: 'Sender pools' }).waitFor()
    const pool = page.getByRole('region', { name: 'Chile support' })
    await poll(() => pool.getByRole('row').count()).toBe(3)
    const rows = pool.getByRole('row')
    expect(await rows.nth(1).textContent()).toMatch(/Santiago 1.*in rotation/)
    expect(await rows.nth(2).textContent()).toMatch(/Santiago 2.*out: quality red.*RED/)
    expect(await pool.textContent()).toContain('1 out of rotation')
    await checkPage(page, 'console-sender-pools')
    expect(complaints).toEqual([])
  })
})
