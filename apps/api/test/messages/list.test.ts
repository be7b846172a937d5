import { randomUUID } from 'node:crypto'
import { MESSAGE_COUNT_LIMIT, MessageList, type MessageView } from '@dispatch/contracts'
import { waitFor } from '@dispatch/testing'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  requestKey,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

let world: TestWorld
let app: TestApp
let key: { id: string; key: string }
let other: { id: string; key: string }

const P1 = '+5511900000001'
const P2 = '+5511900000002'
const P3 = '+5511900000003'
const BATCH = randomUUID()
const OTHER_BATCH = randomUUID()

interface Fixture {
  status: string
  type: string
  phone: string
  acceptedAt: string
  updatedAt: string
  clientReference?: string
  batchId?: string
}

/** A message as the worker (or, scheduled, the API) leaves it; rows are inserted where a test needs old or many. */
async function insertMessage(owner: { id: string }, m: Fixture) {
  const id = randomUUID()
  await world.sql`
    insert into messages (id, api_key_id, type, phone, payload, client_reference, status, attempts, batch_id,
      accepted_at, updated_at)
    values (${id}, ${owner.id}, ${m.type}, ${m.phone}, ${world.sql.json({ text: 'hi' })}, ${m.clientReference ?? null},
      ${m.status}, ${m.status === 'scheduled' ? 0 : 1}, ${m.batchId ?? null}, ${m.acceptedAt}, ${m.updatedAt})`
  return id
}

/** Seven messages of the main key over 1–3 March 2026, in acceptance order (m5 and m6 at the same instant). */
const FIXTURES: Fixture[] = [
  {
    status: 'sent',
    type: 'text',
    phone: P1,
    clientReference: 'r-1',
    batchId: BATCH,
    acceptedAt: '2026-03-01T00:00:00.000Z',
    updatedAt: '2026-03-05T00:00:00Z',
  },
  {
    status: 'delivered',
    type: 'template',
    phone: P2,
    batchId: BATCH,
    acceptedAt: '2026-03-01T23:59:59.999Z',
    updatedAt: '2026-03-02T00:00:01Z',
  },
  {
    status: 'read',
    type: 'image',
    phone: P1,
    clientReference: 'r-3',
    acceptedAt: '2026-03-02T00:00:00.000Z',
    updatedAt: '2026-03-09T00:00:00Z',
  },
  {
    status: 'failed',
    type: 'text',
    phone: P2,
    clientReference: 'r-4',
    acceptedAt: '2026-03-02T12:00:00.000Z',
    updatedAt: '2026-03-03T00:00:00Z',
  },
  {
    status: 'scheduled',
    type: 'text',
    phone: P3,
    acceptedAt: '2026-03-03T08:00:00.000Z',
    updatedAt: '2026-03-03T08:00:00Z',
  },
  {
    status: 'expired',
    type: 'text',
    phone: P3,
    acceptedAt: '2026-03-03T08:00:00.000Z',
    updatedAt: '2026-03-04T00:00:00Z',
  },
  {
    status: 'canceled',
    type: 'template',
    phone: P1,
    acceptedAt: '2026-03-03T20:00:00.000Z',
    updatedAt: '2026-03-03T21:00:00Z',
  },
]
/** m[1] … m[7]: the fixtures' ids (m[0] unused, so the numbers read as above). */
const m: string[] = ['']

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  key = await activeKey(app, { scopes: SEND_SCOPES })
  other = await activeKey(app, { scopes: SEND_SCOPES })
  for (const fixture of FIXTURES) m.push(await insertMessage(key, fixture))
  // The other key: the same phone as m1, a batch of its own, at the same times.
  await insertMessage(other, { ...(FIXTURES[0] as Fixture), clientReference: 'r-1', batchId: OTHER_BATCH })
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

const list = (query = '', apiKey: string = key.key, path = '/api/third-party/messages') =>
  app.inject({ method: 'GET', url: `${path}${query}`, headers: apiKey ? { 'x-api-key': apiKey } : {} })
const ids = async (query: string, apiKey: string = key.key) => {
  const res = await list(query, apiKey)
  expect(res.statusCode, res.body).toBe(200)
  return res.json<MessageList>().data.map((item) => item.messageId)
}
/** The ids in `order`, two accepted at the same instant ordered by id as the list breaks ties. */
const tie = (a: string, b: string, order: 'ASC' | 'DESC') => {
  const sorted = [a, b].sort()
  return order === 'ASC' ? sorted : sorted.reverse()
}
const newestFirst = () => [m[7], ...tie(m[5] as string, m[6] as string, 'DESC'), m[4], m[3], m[2], m[1]]

describe('GET /api/third-party/messages: the envelope', () => {
  it('answers the paging envelope with data of MessageViews; by default one, the newest', async () => {
    const res = await list()
    expect(res.statusCode, res.body).toBe(200)
    const body = res.json<MessageList>()
    expect(Value.Check(MessageList, body), res.body).toBe(true)
    expect(body).toEqual({
      page: 1,
      take: 1,
      itemCount: 7,
      pageCount: 7,
      hasPreviousPage: false,
      hasNextPage: true,
      itemCountExact: true,
      data: [
        {
          messageId: m[7],
          type: 'template',
          phone: P1,
          userId: null,
          status: 'canceled',
          attempts: 1,
          clientReference: null,
          platformMessageId: null,
          lastError: null,
          batchId: null,
          sendAt: null,
          scheduledReason: null,
          expiresAt: null,
          senderId: null,
          senderPhoneNumberId: null,
          fallbackUsed: false,
          pricing: null,
          createdAt: '2026-03-03T20:00:00.000Z',
          updatedAt: '2026-03-03T21:00:00.000Z',
        },
      ],
    })
  })

  it('items are what GET /messages/:id answers for the same message', async () => {
    const { data } = (await list('?take=1000')).json<MessageList>()
    for (const item of data) {
      const one = await app.inject({
        method: 'GET',
        url: `/api/third-party/messages/${item.messageId}`,
        headers: { 'x-api-key': key.key },
      })
      expect(item).toEqual(one.json())
    }
  })

  it('also answers at the path without /api', async () => {
    expect(await ids('?take=1000', key.key)).toEqual(
      (await list('?take=1000', key.key, '/third-party/messages'))
        .json<MessageList>()
        .data.map((i) => i.messageId),
    )
  })
})

describe('filters', () => {
  it('status: one, repeated, comma-separated, both at once; duplicates count once', async () => {
    expect(await ids('?take=100&status=failed')).toEqual([m[4]])
    const failedOrExpired = [m[6], m[4]]
    expect(await ids('?take=100&status=failed&status=expired')).toEqual(failedOrExpired)
    expect(await ids('?take=100&status=failed,expired')).toEqual(failedOrExpired)
    expect(await ids('?take=100&status=expired,failed')).toEqual(failedOrExpired)
    expect(await ids('?take=100&status=failed,expired&status=canceled')).toEqual([m[7], m[6], m[4]])
    expect(await ids('?take=100&status=scheduled')).toEqual([m[5]])
    const res = await list('?take=100&status=sent,sent&status=sent')
    expect(res.json()).toMatchObject({ itemCount: 1, data: [{ messageId: m[1] }] })
  })

  it('a rare status counts right on every page: full ones, the short last one, and past the end', async () => {
    const rare = '&status=failed,expired,canceled'
    expect((await list(`?take=2&page=1${rare}`)).json()).toMatchObject({
      itemCount: 3,
      itemCountExact: true,
      pageCount: 2,
      data: [{ messageId: m[7] }, { messageId: m[6] }],
    })
    expect((await list(`?take=2&page=2${rare}`)).json()).toMatchObject({
      itemCount: 3,
      hasNextPage: false,
      data: [{ messageId: m[4] }],
    })
    expect((await list(`?take=2&page=3${rare}`)).json()).toMatchObject({ itemCount: 3, data: [] })
    expect((await list('?take=3&status=canceled')).json()).toMatchObject({ itemCount: 1, pageCount: 1 })
  })

  it('several statuses page and order like one list (each read on its own, then merged)', async () => {
    const all = '&status=sent,delivered,read,failed,scheduled,expired,canceled'
    const desc = newestFirst()
    expect(await ids(`?take=100${all}`)).toEqual(desc)
    const pages = [1, 2, 3, 4].map((page) => ids(`?take=2&page=${page}${all}`))
    expect((await Promise.all(pages)).flat()).toEqual(desc)
    expect(await ids(`?take=3&page=2&order=ASC${all}`)).toEqual([...desc].reverse().slice(3, 6))
    const byUpdate = (await ids(`?take=100&orderField=updatedAt${all}`)).map((id) => m.indexOf(id))
    expect(byUpdate).toEqual([3, 1, 6, 7, 5, 4, 2])
    const page = (await list(`?take=2&page=2${all}`)).json<MessageList>()
    expect(page).toMatchObject({ itemCount: 7, pageCount: 4, hasPreviousPage: true, hasNextPage: true })
  })

  it('type (a list too), phone, clientReference, batchId, and filters together', async () => {
    expect(await ids('?take=100&type=image')).toEqual([m[3]])
    expect(await ids('?take=100&type=template,image')).toEqual([m[7], m[3], m[2]])
    expect(await ids(`?take=100&phone=${encodeURIComponent(P1)}`)).toEqual([m[7], m[3], m[1]])
    expect(await ids('?take=100&clientReference=r-3')).toEqual([m[3]])
    expect(await ids(`?take=100&batchId=${BATCH}`)).toEqual([m[2], m[1]])
    expect(await ids(`?take=100&phone=${encodeURIComponent(P1)}&status=read,sent&type=text`)).toEqual([m[1]])
    expect(await ids(`?take=100&batchId=${BATCH}&status=read`)).toEqual([])
  })

  it('q is an exact match on the message id, the client reference or the phone', async () => {
    expect(await ids(`?take=100&q=${m[5]}`)).toEqual([m[5]])
    expect(await ids(`?take=100&q=${m[5]?.toUpperCase()}`)).toEqual([m[5]])
    expect(await ids('?take=100&q=r-4')).toEqual([m[4]])
    expect(await ids(`?take=100&q=${encodeURIComponent(P3)}`)).toEqual(
      tie(m[5] as string, m[6] as string, 'DESC'),
    )
    expect(await ids('?take=100&q=r-')).toEqual([])
  })

  it('startDate and endDate: calendar days (UTC) inclusive, to the millisecond at both edges', async () => {
    expect(await ids('?take=100&startDate=2026-03-02')).toEqual(newestFirst().slice(0, 5))
    expect(await ids('?take=100&endDate=2026-03-01')).toEqual([m[2], m[1]])
    expect(await ids('?take=100&startDate=2026-03-02&endDate=2026-03-02')).toEqual([m[4], m[3]])
    expect(await ids('?take=100&startDate=2026-03-04')).toEqual([])
    expect(await ids('?take=100&endDate=2026-02-28')).toEqual([])
  })

  it('startDate and endDate: instants, inclusive, in any offset', async () => {
    expect(await ids('?take=100&startDate=2026-03-02T12:00:00Z&endDate=2026-03-03T08:00:00Z')).toEqual([
      ...tie(m[5] as string, m[6] as string, 'DESC'),
      m[4],
    ])
    expect(
      await ids('?take=100&startDate=2026-03-02T12:00:00.001Z&endDate=2026-03-03T07:59:59.999Z'),
    ).toEqual([])
    // 09:00 at -03:00 is 12:00 UTC.
    expect(
      await ids(`?take=100&startDate=${encodeURIComponent('2026-03-02T09:00:00-03:00')}&endDate=2026-03-02`),
    ).toEqual([m[4]])
    expect(await ids('?take=100&startDate=2026-03-01T23:59:59.999Z&endDate=2026-03-02T00:00:00Z')).toEqual([
      m[3],
      m[2],
    ])
    // Microseconds count: the edge at 23:59:59.999000 is inside, a microsecond later is not.
    expect(await ids('?take=100&startDate=2026-03-01T23:59:59.999001Z&endDate=2026-03-02t00:00:00z')).toEqual(
      [m[3]],
    )
    expect(await ids('?take=100&endDate=2026-03-01T23:59:59.998999Z')).toEqual([m[1]])
  })

  it('deleted=true lists nothing (messages are never deleted); deleted=false everything', async () => {
    expect(await ids('?take=100&deleted=true')).toEqual([])
    expect(await ids('?take=100&deleted=false')).toEqual(newestFirst())
  })
})

describe('ordering and paging', () => {
  it('by acceptance time both ways, ties broken by id; by update time both ways', async () => {
    expect(await ids('?take=100')).toEqual(newestFirst())
    expect(await ids('?take=100&order=DESC&orderField=createdAt')).toEqual(newestFirst())
    expect(await ids('?take=100&order=ASC')).toEqual([...newestFirst()].reverse())
    const byUpdate = (await ids('?take=100&orderField=updatedAt')).map((id) => m.indexOf(id))
    expect(byUpdate).toEqual([3, 1, 6, 7, 5, 4, 2])
    const byUpdateAsc = (await ids('?take=100&orderField=updatedAt&order=ASC')).map((id) => m.indexOf(id))
    expect(byUpdateAsc).toEqual([2, 4, 5, 7, 6, 1, 3])
  })

  it('pages: the last one, one past the end, an empty result, take=1000', async () => {
    expect((await list('?take=3&page=3')).json()).toMatchObject({
      page: 3,
      take: 3,
      itemCount: 7,
      pageCount: 3,
      hasPreviousPage: true,
      hasNextPage: false,
      data: [{ messageId: m[1] }],
    })
    expect((await list('?take=3&page=4')).json()).toEqual({
      page: 4,
      take: 3,
      itemCount: 7,
      pageCount: 3,
      hasPreviousPage: true,
      hasNextPage: false,
      itemCountExact: true,
      data: [],
    })
    expect((await list('?take=10&clientReference=nothing-like-this')).json()).toEqual({
      page: 1,
      take: 10,
      itemCount: 0,
      pageCount: 0,
      hasPreviousPage: false,
      hasNextPage: false,
      itemCountExact: true,
      data: [],
    })
    expect((await list('?take=1000')).json()).toMatchObject({ take: 1000, itemCount: 7, pageCount: 1 })
  })

  it(`counts exactly up to ${MESSAGE_COUNT_LIMIT.toLocaleString('en-US')} matches, then gives a lower bound`, async () => {
    const bulk = await activeKey(app, { scopes: ['read:messages'] })
    const total = MESSAGE_COUNT_LIMIT + 50
    await world.sql`
      insert into messages (id, api_key_id, type, phone, payload, status, attempts, accepted_at, updated_at)
      select gen_random_uuid(), ${bulk.id}, 'text', ${P1}, '{}'::jsonb, 'sent', 1,
             timestamptz '2026-01-01' + i * interval '1 second', timestamptz '2026-01-01' + i * interval '1 second'
      from generate_series(1, ${total}) i`
    const page = (query: string) => list(query, bulk.key).then((res) => res.json<MessageList>())
    expect(await page('?take=100')).toMatchObject({
      itemCount: MESSAGE_COUNT_LIMIT + 1,
      itemCountExact: false,
      pageCount: 101,
      hasNextPage: true,
    })
    // A page reaching past the limit is counted to its end, so the last pages are exact.
    const last = await page('?take=100&page=101')
    expect(last).toMatchObject({ itemCount: total, itemCountExact: true, pageCount: 101, hasNextPage: false })
    expect(last.data).toHaveLength(50)
    expect(await page('?take=100&page=100')).toMatchObject({ itemCountExact: false, hasNextPage: true })
    expect(await page('?take=1&status=failed')).toMatchObject({ itemCount: 0, itemCountExact: true })
    expect(await page('?take=1&startDate=2026-01-01T00:00:01Z&endDate=2026-01-01T00:01:40Z')).toMatchObject({
      itemCount: 100,
      itemCountExact: true,
    })
  })
})

describe('invalid parameters', () => {
  it.each([
    ['?take=1001', /^querystring\.take must be <= 1000/],
    ['?take=0', /^querystring\.take must be >= 1/],
    ['?page=0', /^querystring\.page must be >= 1/],
    ['?page=two', /^querystring\.page must be integer/],
    ['?order=down', /^querystring\.order must be one of "ASC", "DESC"/],
    ['?orderField=phone', /^querystring\.orderField must be one of "createdAt", "updatedAt"/],
    ['?status=bogus', /^querystring\.status\[0\] must be one of "scheduled"/],
    ['?status=sent,bogus', /^querystring\.status\[1\] must be one of/],
    ['?type=sms', /^querystring\.type\[0\] must be one of "text", "template", "image"/],
    ['?phone=5511900000001', /^querystring\.phone must match pattern/],
    ['?batchId=not-a-uuid', /^querystring\.batchId must match format "uuid"/],
    [`?clientReference=${'x'.repeat(257)}`, /^querystring\.clientReference must NOT have more than 256/],
    [
      '?startDate=2026-02-30',
      /^querystring\.startDate must be a date \(2026-03-01\) or a date-time with its offset/,
    ],
    ['?startDate=0000-01-01', /^querystring\.startDate must be a date/],
    ['?startDate=2026-03-01T24:00:00Z', /^querystring\.startDate must be a date/],
    ['?startDate=2026-03-01T10:00:00.1234567Z', /^querystring\.startDate must be a date/],
    ['?endDate=2026-03-01T10:00:00', /^querystring\.endDate must be a date/],
    ['?endDate=2026-03-01T10:00:00%2B15:00', /^querystring\.endDate must be a date/],
    ['?endDate=yesterday', /^querystring\.endDate must be a date/],
    [`?endDate=${'2'.repeat(41)}`, /^querystring\.endDate must NOT have more than 40 characters/],
    ['?startDate=2026-03-03&endDate=2026-03-02', /startDate must not be after querystring\.endDate/],
    ['?startDate=2026-03-02T00:00:00.001Z&endDate=2026-03-02T00:00:00Z', /startDate must not be after/],
    [
      '?status=sent&status=sent&status=sent&status=sent&status=sent&status=sent&status=sent&status=sent&status=sent&status=sent',
      /^querystring\.status must NOT have more than 9 items/,
    ],
    ['?foo=1', /^querystring has unknown property "foo"/],
  ])('%s → 400 VALIDATION_ERROR naming the parameter', async (query, message) => {
    expectError(await list(query), 400, 'VALIDATION_ERROR', message)
  })
})

describe('security', () => {
  it("another key's messages never appear, not even by its batchId, phone, reference or id", async () => {
    const mine = await ids('?take=100', other.key)
    expect(mine).toHaveLength(1)
    expect(mine).not.toContain(m[1])
    expect(await ids(`?take=100&batchId=${BATCH}`, other.key)).toEqual([])
    expect(await ids(`?take=100&q=${m[1]}`, other.key)).toEqual([])
    expect(await ids(`?take=100&phone=${encodeURIComponent(P1)}`, other.key)).toEqual(mine)
    expect(await ids('?take=100&clientReference=r-1', other.key)).toEqual(mine)
    expect(await ids(`?take=100&batchId=${OTHER_BATCH}`)).toEqual([])
    expect((await list('?take=100')).json()).toMatchObject({ itemCount: 7 })
  })

  it('needs an active key with read:messages', async () => {
    expectError(await list('', ''), 401, 'API_KEY_MISSING')
    expectError(await list('', 'mdk_dev_not-a-real-key-0000000000000000'), 401, 'API_KEY_INVALID')
    const sendOnly = await activeKey(app, { scopes: ['send:free-text'] })
    expectError(await list('', sendOnly.key), 403, 'INSUFFICIENT_SCOPE', /read:messages/)
    const pending = await requestKey(app, { scopes: ['read:messages'] })
    expectError(await list('', pending.key), 403, 'API_KEY_NOT_ACTIVE', /pending/)
  })

  it('a tenantId may name only the key’s own tenant', async () => {
    const tenantKey = await activeKey(app, { scopes: ['read:messages'], tenantId: 'acme' })
    expect((await list('?tenantId=acme', tenantKey.key)).statusCode).toBe(200)
    expectError(await list('?tenantId=globex', tenantKey.key), 403, 'TENANT_FORBIDDEN')
    expectError(await list('?tenantId=acme'), 403, 'TENANT_FORBIDDEN')
  })
})

describe('when a message appears', () => {
  it('is readable by id at once, listed once a worker has recorded it', async () => {
    const late = await activeKey(app, { scopes: SEND_SCOPES })
    const accepted = (
      await send(app, 'send-text', late.key, { phone: P1, text: 'Hello', clientReference: 'appears-1' })
    ).json()
    const byId = await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${accepted.messageId}`,
      headers: { 'x-api-key': late.key },
    })
    expect(byId.json()).toMatchObject({ messageId: accepted.messageId, status: 'queued' })
    // No worker runs: the job waits in Redis, and the list (Postgres) does not know it yet.
    expect((await list('?take=100', late.key)).json()).toMatchObject({ itemCount: 0, data: [] })

    const worker = await startTestWorker(world, { WORKER_QUEUES: 'messages' })
    try {
      const listed = await waitFor(
        async () => (await list('?take=100&clientReference=appears-1', late.key)).json<MessageList>().data[0],
        { what: 'the message to be listed' },
      )
      const recorded = await app.inject({
        method: 'GET',
        url: `/api/third-party/messages/${accepted.messageId}`,
        headers: { 'x-api-key': late.key },
      })
      expect(listed).toEqual(recorded.json<MessageView>())
      expect(listed).toMatchObject({
        messageId: accepted.messageId,
        status: 'sent',
        clientReference: 'appears-1',
        createdAt: accepted.createdAt,
      })
    } finally {
      await worker.close()
    }
  })
})
