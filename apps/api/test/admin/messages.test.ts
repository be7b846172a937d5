import { randomUUID } from 'node:crypto'
import { AdminMessageList, type AdminMessageView } from '@dispatch/contracts'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

let world: TestWorld
let app: TestApp
let keyA: { id: string; key: string }
let keyB: { id: string; key: string }
const SECOND = randomUUID()
const ids: Record<string, string> = {}

/** A message as the worker leaves it, inserted where the test needs it. */
async function insert(
  name: string,
  owner: { id: string },
  m: { status: string; acceptedAt: string; senderId: string | null; errorCode?: string },
) {
  const id = randomUUID()
  ids[name] = id
  await world.sql`
    insert into messages (id, api_key_id, type, phone, payload, status, attempts, sender_id, last_error_code,
      last_error_message, accepted_at, updated_at)
    values (${id}, ${owner.id}, 'text', '+5511987654321', ${world.sql.json({ phone: '+5511987654321', text: 'hi' })},
      ${m.status}, 1, ${m.senderId}, ${m.errorCode ?? null}, ${m.errorCode ? 'refused' : null}, ${m.acceptedAt},
      ${m.acceptedAt})`
}

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  keyA = await activeKey(app)
  keyB = await activeKey(app)
  // In acceptance order: a1, a2, b1, b2, b3.
  await insert('a1', keyA, {
    status: 'failed',
    acceptedAt: '2026-03-01T10:00:00Z',
    senderId: 'default',
    errorCode: '131026',
  })
  await insert('a2', keyA, { status: 'sent', acceptedAt: '2026-03-02T10:00:00Z', senderId: 'default' })
  await insert('b1', keyB, {
    status: 'failed',
    acceptedAt: '2026-03-02T11:00:00Z',
    senderId: SECOND,
    errorCode: '131047',
  })
  // Recorded before senders existed: no sender, which is the default one.
  await insert('b2', keyB, {
    status: 'failed',
    acceptedAt: '2026-03-03T10:00:00Z',
    senderId: null,
    errorCode: '131026',
  })
  await insert('b3', keyB, { status: 'delivered', acceptedAt: '2026-03-03T11:00:00Z', senderId: SECOND })
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

const list = (query: string, headers: Record<string, string> = asAdmin()) =>
  app.inject({ method: 'GET', url: `/api/admin/messages?${query}`, headers })

async function listed(query: string) {
  const res = await list(`take=100&${query}`)
  expect(res.statusCode, res.body).toBe(200)
  const body = res.json<AdminMessageList>()
  expect(Value.Check(AdminMessageList, body), res.body).toBe(true)
  const names = Object.fromEntries(Object.entries(ids).map(([name, id]) => [id, name]))
  return { body, names: body.data.map((m) => names[m.messageId]) }
}

describe('GET /api/admin/messages', () => {
  it('lists every key’s messages, newest first, in the paging envelope, with the key and retries', async () => {
    const { body, names } = await listed('')
    expect(names).toEqual(['b3', 'b2', 'b1', 'a2', 'a1'])
    expect(body).toMatchObject({ page: 1, take: 100, itemCount: 5, pageCount: 1, itemCountExact: true })
    const a1 = body.data.find((m) => m.messageId === ids.a1) as AdminMessageView
    expect(a1).toMatchObject({
      apiKeyId: keyA.id,
      status: 'failed',
      lastError: { code: '131026', message: 'refused' },
      retryCount: 0,
      retriedAt: null,
    })
  })

  it('takes the key list’s paging and order: take defaults to 1, ASC, updatedAt', async () => {
    const first = (await list('')).json<AdminMessageList>()
    expect(first).toMatchObject({ take: 1, itemCount: 5, pageCount: 5, hasNextPage: true })
    expect((await listed('order=ASC')).names).toEqual(['a1', 'a2', 'b1', 'b2', 'b3'])
    const page = (await list('order=ASC&orderField=updatedAt&take=2&page=2')).json<AdminMessageList>()
    expect(page.data.map((m) => m.messageId)).toEqual([ids.b1, ids.b2])
    expect(page).toMatchObject({ page: 2, pageCount: 3, hasPreviousPage: true, hasNextPage: true })
  })

  it('filters by status (one, several, repeated or comma-separated), key, sender, error code and dates', async () => {
    expect((await listed('status=failed')).names).toEqual(['b2', 'b1', 'a1'])
    expect((await listed('status=failed,sent')).names).toEqual(['b2', 'b1', 'a2', 'a1'])
    expect((await listed('status=failed&status=delivered')).names).toEqual(['b3', 'b2', 'b1', 'a1'])
    expect((await listed(`apiKeyId=${keyB.id}`)).names).toEqual(['b3', 'b2', 'b1'])
    expect((await listed('senderId=default')).names).toEqual(['b2', 'a2', 'a1'])
    expect((await listed(`senderId=${SECOND}`)).names).toEqual(['b3', 'b1'])
    expect((await listed('errorCode=131026')).names).toEqual(['b2', 'a1'])
    expect((await listed(`status=failed&errorCode=131026&apiKeyId=${keyB.id}`)).names).toEqual(['b2'])
    expect((await listed('startDate=2026-03-02&endDate=2026-03-02')).names).toEqual(['b1', 'a2'])
    expect((await listed('startDate=2026-03-02T10:30:00Z')).names).toEqual(['b3', 'b2', 'b1'])
    expect((await listed(`q=${ids.b1}`)).names).toEqual(['b1'])
  })

  it('refuses what the key list refuses, and a tenant (messages belong to keys)', async () => {
    expectError(await list('status=lost'), 400, 'VALIDATION_ERROR', /status/)
    expectError(await list('apiKeyId=nope'), 400, 'VALIDATION_ERROR', /apiKeyId/)
    expectError(await list('take=1001'), 400, 'VALIDATION_ERROR', /take/)
    expectError(await list('tenantId=acme'), 400, 'VALIDATION_ERROR', /tenantId/)
    expectError(
      await list('startDate=2026-03-03&endDate=2026-03-02'),
      400,
      'VALIDATION_ERROR',
      /startDate must not be after/,
    )
  })

  it('is for admins only: 401 without a token, with a wrong one, or with an API key', async () => {
    expectError(await list('', {}), 401, 'ADMIN_AUTH_REQUIRED')
    expectError(await list('', asAdmin('not-the-admin-token-000')), 401, 'ADMIN_AUTH_REQUIRED')
    expectError(await list('', { 'x-api-key': keyA.key }), 401, 'ADMIN_AUTH_REQUIRED')
    expect((await list('', asAdmin(ADMIN.ops))).statusCode).toBe(200)
  })
})
