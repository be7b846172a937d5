import { randomBytes } from 'node:crypto'
import type { ApiKeyAdminDetail, SenderPoolList, SenderPoolView, SenderView } from '@dispatch/contracts'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { browserBinary, checkPage, launchBrowser, openPage, poll } from './browser.ts'

/**
 * The console's sender pools page (issue 44): each pool with its members in order and whether each
 * is in rotation, and why not; creating, changing and deleting a pool there, and binding a key to
 * one on the key's page, with the API's refusals in its words. Its data comes through
 * `/api/admin/sender-pools` with the console's session; the page itself is driven in Chromium.
 */

let world: TestWorld
let app: TestApp
let baseUrl: string
let keyId: string
let salesPoolId: string
/** The senders by name: three of one business (Santiago), one of another (Lima). */
const senderIds = new Map<string, string>()

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { SECRETS_KEY: randomBytes(32).toString('base64') })
  const ids: string[] = []
  for (const [n, [name, businessId]] of [
    ['Santiago 1', '4400044'],
    ['Santiago 2', '4400044'],
    ['Santiago 3', '4400044'],
    ['Lima 1', '5500055'],
  ].entries()) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/admin/senders',
      headers: asAdmin(),
      payload: {
        phoneNumberId: `3000${Date.now()}${n}`,
        displayName: name,
        accessToken: `EAAG${randomBytes(24).toString('base64url')}`,
        businessId,
      },
    })
    expect(res.statusCode, res.body).toBe(201)
    senderIds.set(name as string, res.json<SenderView>().id)
    if (n < 2) ids.push(res.json<SenderView>().id)
  }
  keyId = (await activeKey(app, { clientName: 'Valparaíso Shop' })).id
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

  const poolNamed = async (name: string) => {
    const res = await app.inject({
      method: 'GET',
      url: `/api/admin/sender-pools?q=${name}&take=10`,
      headers: asAdmin(),
    })
    return res.json<SenderPoolList>().data.find((pool) => pool.name === name) as SenderPoolView
  }
  const membersOf = async (name: string) =>
    (await poolNamed(name))?.members.map((m) => [m.displayName, m.weight]) ?? []

  it("creates a pool of one business's senders, in the order and with the weights chosen", async () => {
    const form = page.getByRole('form', { name: 'New pool' })
    await form.getByLabel('Pool name').fill('Chile sales')
    await form.getByLabel('Add a sender').selectOption({ label: 'Santiago 3 (business:4400044)' })
    await form.getByRole('button', { name: 'Add member' }).click()
    // Once a member is chosen, only senders of its business are offered.
    const offered = await form.getByLabel('Add a sender').locator('option').allTextContents()
    expect(offered).toContain('Santiago 1 (business:4400044)')
    expect(offered.join()).not.toContain('Lima 1')
    await form.getByLabel('Add a sender').selectOption({ label: 'Santiago 1 (business:4400044)' })
    await form.getByRole('button', { name: 'Add member' }).click()
    await form.getByLabel('Weight of Santiago 1').fill('5')
    await form.getByRole('button', { name: 'Move Santiago 1 up' }).click()
    await checkPage(page, 'console-sender-pools-new')
    await form.getByRole('button', { name: 'Create pool' }).click()
    await poll(() => page.getByText('Pool Chile sales created.').count()).toBe(1)
    const pool = page.getByRole('region', { name: 'Chile sales' })
    await poll(() => pool.getByRole('row').count()).toBe(3)
    expect(await pool.getByRole('row').nth(1).textContent()).toMatch(/Santiago 1.*5.*in rotation/)
    expect(await pool.getByRole('row').nth(2).textContent()).toMatch(/Santiago 3.*1.*in rotation/)
    expect(await membersOf('Chile sales')).toEqual([
      ['Santiago 1', 5],
      ['Santiago 3', 1],
    ])
    salesPoolId = (await poolNamed('Chile sales')).id
    // The form is empty again for the next pool.
    expect(await form.getByLabel('Pool name').inputValue()).toBe('')
  })

  it("changes a pool's members, their order and weights", async () => {
    const pool = page.getByRole('region', { name: 'Chile sales' })
    await pool.getByRole('button', { name: 'Change members' }).click()
    const form = pool.getByRole('form', { name: 'Change Chile sales' })
    await form.getByRole('button', { name: 'Remove Santiago 3' }).click()
    await form.getByLabel('Add a sender').selectOption({ label: 'Santiago 2 (business:4400044)' })
    await form.getByRole('button', { name: 'Add member' }).click()
    await form.getByLabel('Weight of Santiago 2').fill('3')
    await form.getByRole('button', { name: 'Move Santiago 2 up' }).click()
    await form.getByRole('button', { name: 'Save pool' }).click()
    await poll(() => pool.getByText('Pool saved.').count()).toBe(1)
    await poll(() => pool.getByRole('row').nth(1).textContent()).toMatch(/Santiago 2.*3.*out: quality red/)
    expect(await pool.getByRole('row').nth(2).textContent()).toMatch(/Santiago 1.*5.*in rotation/)
    expect(await membersOf('Chile sales')).toEqual([
      ['Santiago 2', 3],
      ['Santiago 1', 5],
    ])
  })

  it("binds a key to the pool on the key's page, and says in words why a sender outside it is refused", async () => {
    await page.goto(`${baseUrl}/console/keys/${keyId}`)
    await page.getByRole('heading', { level: 1, name: 'Key' }).waitFor()
    const binding = page.getByRole('region', { name: 'Sender pool' })
    await binding.getByText('Not bound to a pool').waitFor()
    await poll(() => binding.getByRole('combobox', { name: /^Pool/ }).locator('option').count()).toBe(3)
    await binding
      .getByRole('combobox', { name: /^Pool/ })
      .selectOption({ label: 'Chile sales (business:4400044)' })
    await binding.getByRole('button', { name: 'Save pool' }).click()
    await poll(() => binding.getByRole('status').textContent()).toBe('Bound to the pool.')
    await poll(() => binding.textContent()).toContain('Bound to Chile sales (Santiago 2, Santiago 1)')
    await poll(() => page.locator('.facts').textContent()).toContain('Sender poolChile sales')
    const key = async () =>
      (
        await app.inject({ method: 'GET', url: `/api/admin/api-keys/${keyId}`, headers: asAdmin() })
      ).json<ApiKeyAdminDetail>()
    const pool = await poolNamed('Chile sales')
    // The key had no sender of the pool's: it moved to the first member.
    expect(await key()).toMatchObject({ senderPoolId: pool.id, senderId: senderIds.get('Santiago 2') })
    const limits = page.getByRole('form', { name: 'Limits' })
    await poll(() => limits.getByLabel('Sender').inputValue()).toBe(senderIds.get('Santiago 2'))
    await limits.getByLabel('Sender').selectOption({ label: 'Lima 1' })
    await limits.getByRole('button', { name: 'Save limits' }).click()
    await poll(() => limits.locator('..').getByRole('alert').textContent()).toMatch(
      /is not a member of sender pool .*a key bound to a pool sends as one of the pool's members \(INVALID_REFERENCE\)/,
    )
    expect((await key()).senderId).toBe(senderIds.get('Santiago 2'))
    await checkPage(page, 'console-key-pool')
    expect(complaints).toEqual([])
  })

  it('refuses, in words, to delete a bound pool or drop a bound key’s sender; unbound, deletes it', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sender pools' }).click()
    const pool = page.getByRole('region', { name: 'Chile sales' })
    await poll(() => pool.textContent()).toContain('1 bound key')
    await pool.getByRole('button', { name: 'Delete pool Chile sales' }).click()
    await poll(() => pool.getByRole('alert').textContent()).toBe(
      'An API key is bound to this pool; unbind them (`senderPoolId: null`) first (SENDER_POOL_IN_USE)',
    )
    await pool.getByRole('button', { name: 'Change members' }).click()
    const form = pool.getByRole('form', { name: 'Change Chile sales' })
    await form.getByRole('button', { name: 'Remove Santiago 2' }).click()
    await form.getByRole('button', { name: 'Save pool' }).click()
    await poll(() => pool.getByRole('alert').first().textContent()).toContain(
      `is the own sender of an API key bound to this pool (${keyId}); give the key another member first (SENDER_POOL_IN_USE)`,
    )
    expect(await membersOf('Chile sales')).toEqual([
      ['Santiago 2', 3],
      ['Santiago 1', 5],
    ])
    await checkPage(page, 'console-sender-pools-refused')
    // Unbound from the key's page, the pool goes.
    await page.goto(`${baseUrl}/console/keys/${keyId}`)
    const binding = page.getByRole('region', { name: 'Sender pool' })
    await binding.getByRole('button', { name: 'Unbind' }).click()
    await poll(() => binding.getByRole('status').textContent()).toBe('Unbound from its pool.')
    await binding.getByText('Not bound to a pool').waitFor()
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sender pools' }).click()
    await page.getByRole('button', { name: 'Delete pool Chile sales' }).click()
    await poll(() => page.getByRole('region', { name: 'Chile sales' }).count()).toBe(0)
    expect(await poolNamed('Chile sales')).toBeUndefined()
    expect(complaints).toEqual([])
  })

  it("keeps the admin's changes in the audit log and the key's history, under the admin's name", async () => {
    // The refused delete and change wrote nothing.
    const rows = await world.sql<{ actor: string; action: string }[]>`
      select actor, action from admin_audit_log
      where target_type = 'sender_pool' and target_id = ${salesPoolId} order by id`
    expect(rows).toEqual([
      { actor: 'ana', action: 'sender_pool.create' },
      { actor: 'ana', action: 'sender_pool.update' },
      { actor: 'ana', action: 'sender_pool.delete' },
    ])
    const history = (
      await app.inject({ method: 'GET', url: `/api/admin/api-keys/${keyId}`, headers: asAdmin() })
    ).json<ApiKeyAdminDetail>().history
    const bindings = history.filter((entry) => entry.changes?.senderPoolId)
    expect(bindings.map((entry) => [entry.actor, entry.changes?.senderPoolId?.to === null])).toEqual([
      ['ana', false],
      ['ana', true],
    ])
  })

  it("says in words that a pool's senders are all of one business, when a member's business changed", async () => {
    const santiago2 = senderIds.get('Santiago 2') as string
    const moved = await app.inject({
      method: 'PATCH',
      url: `/api/admin/senders/${santiago2}`,
      headers: asAdmin(),
      payload: { businessId: '5500055' },
    })
    expect(moved.statusCode, moved.body).toBe(200)
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Keys' }).click()
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sender pools' }).click()
    const pool = page.getByRole('region', { name: 'Chile support' })
    await poll(() => pool.getByRole('row').nth(2).textContent()).toContain(
      "business:5500055 (not the pool's)",
    )
    await pool.getByRole('button', { name: 'Change members' }).click()
    const form = pool.getByRole('form', { name: 'Change Chile support' })
    await form.getByLabel('Weight of Santiago 1').fill('4')
    await form.getByRole('button', { name: 'Save pool' }).click()
    await poll(() => pool.getByRole('alert').textContent()).toBe(
      `Sender "${santiago2}" is of business portfolio business:5500055, not business:4400044: ` +
        "a pool's senders are all of one business (its businessId, else its wabaId) (SENDER_POOL_BUSINESS_MISMATCH)",
    )
    expect(await membersOf('Chile support')).toEqual([
      ['Santiago 1', 1],
      ['Santiago 2', 2],
    ])
    await checkPage(page, 'console-sender-pools-business')
    expect(complaints).toEqual([])
  })
})
