import { randomBytes } from 'node:crypto'
import { type SenderView, TemplateList, TemplateSyncResult } from '@dispatch/contracts'
import { upsertDefaultSender } from '@dispatch/db'
import { type FakeTemplate, type FakeWhatsApp, startFakeWhatsApp } from '@dispatch/testing'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const SECRETS_KEY = randomBytes(32).toString('base64')
const WABA_A = '300000000000001'
const WABA_B = '300000000000002'
const TOKEN_A = `EAAG${randomBytes(16).toString('hex')}`
const TOKEN_B = `EAAG${randomBytes(16).toString('hex')}`

/** A positional utility template with `n` body variables. */
const template = (i: number, overrides: Partial<FakeTemplate> = {}): FakeTemplate => ({
  id: String(5_000_000 + i),
  name: `notice_${String(i).padStart(4, '0')}`,
  language: i % 2 === 0 ? 'en_US' : 'pt_BR',
  status: 'APPROVED',
  category: i % 3 === 0 ? 'MARKETING' : 'UTILITY',
  parameter_format: 'POSITIONAL',
  quality_score: { score: 'GREEN' },
  components: [{ type: 'BODY', text: 'Hello {{1}}, order {{2}}' }],
  ...overrides,
})

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let senderA: SenderView
let senderB: SenderView

const admin = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  app.inject({ method, url, headers: asAdmin(), ...(payload ? { payload } : {}) })

async function createSender(wabaId: string | undefined, accessToken: string): Promise<SenderView> {
  const res = await admin('POST', '/api/admin/senders', {
    phoneNumberId: `20${Date.now()}${Math.floor(Math.random() * 1000)}`,
    displayName: 'Templates test',
    accessToken,
    ...(wabaId ? { wabaId } : {}),
  })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<SenderView>()
}

const sync = (senderId: string) => admin('POST', `/api/admin/senders/${senderId}/templates/sync`)

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  app = await buildTestApp(world, { SECRETS_KEY, WHATSAPP_API_URL: fake.url })
  // 600 templates: three pages of the 250 a sync asks for.
  fake.templates.set(
    WABA_A,
    Array.from({ length: 600 }, (_, i) => template(i)),
  )
  fake.templates.requireToken(WABA_A, TOKEN_A)
  fake.templates.set(WABA_B, [template(9000, { name: 'other_sender_only' })])
  fake.templates.requireToken(WABA_B, TOKEN_B)
  senderA = await createSender(WABA_A, TOKEN_A)
  senderB = await createSender(WABA_B, TOKEN_B)
})

afterAll(async () => {
  await app?.close()
  await fake?.close()
  await world?.close()
})

describe('syncing a sender’s templates', () => {
  it('reads every page of the account’s catalog and answers the counts', async () => {
    expect(senderA).toMatchObject({ wabaId: WABA_A, templatesSyncedAt: null, serviceWindowPolicy: 'off' })
    const before = fake.templateReads.length
    const res = await sync(senderA.id)
    expect(res.statusCode, res.body).toBe(200)
    const result = res.json<TemplateSyncResult>()
    expect(Value.Check(TemplateSyncResult, result)).toBe(true)
    expect(result).toMatchObject({ senderId: senderA.id, added: 600, changed: 0, removed: 0, total: 600 })
    const reads = fake.templateReads.slice(before)
    expect(reads).toHaveLength(3)
    expect(reads.map(({ url }) => url.pathname)).toEqual(Array(3).fill(`/v21.0/${WABA_A}/message_templates`))
    const view = (await admin('GET', `/api/admin/senders/${senderA.id}`)).json<SenderView>()
    expect(view.templatesSyncedAt).toBe(result.syncedAt)
  })

  it('counts what changed since the last sync: added, changed and removed', async () => {
    const catalog = fake.templates.get(WABA_A)
    fake.templates.set(WABA_A, [
      ...catalog.slice(2).map((t, i) => (i === 0 ? { ...t, status: 'PAUSED' } : t)),
      template(7001),
      template(7002),
      template(7003),
    ])
    const res = await sync(senderA.id)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({ added: 3, changed: 1, removed: 2, total: 601 })
    const again = await sync(senderA.id)
    expect(again.json()).toMatchObject({ added: 0, changed: 0, removed: 0, total: 601 })
  })

  it('is refused with a clear error when the sender cannot be synced', async () => {
    const noAccount = await createSender(undefined, `EAAG${randomBytes(16).toString('hex')}`)
    expectError(await sync(noAccount.id), 409, 'INVALID_STATE_TRANSITION', /wabaId/)

    const wrongToken = await createSender(WABA_A, `EAAG${randomBytes(16).toString('hex')}`)
    expectError(await sync(wrongToken.id), 502, 'PLATFORM_ERROR', /token \(190\)/)

    const unknownAccount = await createSender('399999999999999', TOKEN_A)
    expectError(await sync(unknownAccount.id), 502, 'PLATFORM_ERROR', /does not exist/)

    // The environment's sender in sandbox mode has no account to read.
    await upsertDefaultSender(app.deps.db, {
      phoneNumberId: '100000000000001',
      displayName: 'Sandbox (environment)',
      ratePerSecond: 80,
      accessTokenLast4: null,
    })
    const patched = await admin('PATCH', '/api/admin/senders/default', { wabaId: WABA_A })
    expect(patched.statusCode, patched.body).toBe(200)
    expectError(await sync('default'), 409, 'INVALID_STATE_TRANSITION', /sandbox has no templates/)

    expectError(await sync('00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND')
    expectError(await sync('not-an-id'), 404, 'NOT_FOUND')
    const anonymous = await app.inject({
      method: 'POST',
      url: `/api/admin/senders/${senderA.id}/templates/sync`,
    })
    expectError(anonymous, 401, 'ADMIN_AUTH_REQUIRED')
  })

  it('is audited under the admin’s name', async () => {
    const rows = await world.sql`
      select actor, action, details from admin_audit_log where target_id = ${senderA.id} order by id`
    expect(rows.map((r) => r.action)).toEqual(['templates.sync', 'templates.sync', 'templates.sync'])
    expect(rows[0]).toMatchObject({ actor: 'ana', details: { added: 600, total: 600 } })
  })

  it('empties the catalog when the sender moves to another account', async () => {
    const moving = await createSender(WABA_B, TOKEN_B)
    expect((await sync(moving.id)).json()).toMatchObject({ total: 1 })
    const patched = await admin('PATCH', `/api/admin/senders/${moving.id}`, { wabaId: WABA_A })
    expect(patched.json()).toMatchObject({ wabaId: WABA_A, templatesSyncedAt: null })
    const list = await admin('GET', `/api/admin/senders/${moving.id}/templates?take=10`)
    expect(list.json()).toMatchObject({ itemCount: 0, data: [] })
  })
})

describe('listing templates', () => {
  it('pages and filters a sender’s catalog for admins, with what a send must fill', async () => {
    const res = await admin('GET', `/api/admin/senders/${senderA.id}/templates?take=5&order=ASC`)
    expect(res.statusCode, res.body).toBe(200)
    const page = res.json<TemplateList>()
    expect(Value.Check(TemplateList, page)).toBe(true)
    expect(page).toMatchObject({ page: 1, take: 5, itemCount: 601, pageCount: 121, hasNextPage: true })
    expect(page.data.map((t) => t.name)).toEqual([
      'notice_0002',
      'notice_0003',
      'notice_0004',
      'notice_0005',
      'notice_0006',
    ])
    expect(page.data[0]).toMatchObject({
      id: '5000002',
      language: 'en_US',
      status: 'PAUSED',
      category: 'UTILITY',
      quality: 'GREEN',
      senderId: senderA.id,
      components: [{ type: 'BODY', text: 'Hello {{1}}, order {{2}}' }],
      variables: { parameterFormat: 'positional', body: ['1', '2'], header: null, buttons: [] },
    })

    const paused = (
      await admin('GET', `/api/admin/senders/${senderA.id}/templates?status=PAUSED&take=50`)
    ).json()
    expect(paused.data.map((t: { name: string }) => t.name)).toEqual(['notice_0002'])
    const marketing = await admin(
      'GET',
      `/api/admin/senders/${senderA.id}/templates?category=MARKETING&language=en_US&take=1000`,
    )
    expect(
      marketing
        .json()
        .data.every(
          (t: { category: string; language: string }) => t.category === 'MARKETING' && t.language === 'en_US',
        ),
    ).toBe(true)
    expect(marketing.json().itemCount).toBe(100)
    const one = await admin('GET', `/api/admin/senders/${senderA.id}/templates?name=notice_7002&take=5`)
    expect(one.json()).toMatchObject({ itemCount: 1, data: [{ name: 'notice_7002' }] })

    expectError(
      await admin('GET', `/api/admin/senders/${senderA.id}/templates?status=SHINY`),
      400,
      'VALIDATION_ERROR',
    )
    expectError(
      await admin('GET', `/api/admin/senders/${senderA.id}/templates?orderField=id`),
      400,
      'VALIDATION_ERROR',
    )
  })

  it('shows a key only its own sender’s templates', async () => {
    const keyA = await activeKey(app, { scopes: ['send:template'] })
    const keyB = await activeKey(app, { scopes: ['send:template'] })
    const textOnly = await activeKey(app, { scopes: ['send:free-text'] })
    for (const [key, sender] of [
      [keyA, senderA],
      [keyB, senderB],
    ] as const) {
      const bound = await admin('PATCH', `/api/admin/api-keys/${key.id}`, { senderId: sender.id })
      expect(bound.statusCode, bound.body).toBe(200)
    }
    await sync(senderB.id)
    const list = (key: string, query = '') =>
      app.inject({
        method: 'GET',
        url: `/api/third-party/templates?take=1000${query}`,
        headers: { 'x-api-key': key },
      })

    const ofB = (await list(keyB.key)).json<TemplateList>()
    expect(ofB.data.map((t) => t.name)).toEqual(['other_sender_only'])
    const ofA = (await list(keyA.key, '&name=other_sender_only')).json<TemplateList>()
    expect(ofA).toMatchObject({ itemCount: 0, data: [] })
    expect((await list(keyA.key)).json().itemCount).toBe(601)

    expectError(await list(textOnly.key), 403, 'INSUFFICIENT_SCOPE')
    expectError(
      await app.inject({ method: 'GET', url: '/api/third-party/templates' }),
      401,
      'API_KEY_MISSING',
    )
  })
})
