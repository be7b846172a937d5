import type { AdminMessageListQuery, MessageListQuery } from '@dispatch/contracts'
import { createDb, listAdminMessages, listMessages } from '@dispatch/db'
import { createTestDatabase } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * The lists' `channel` and `fallback` filters as the API plans them (generic plans): those that keep
 * only messages with a fallback (`channel=sms`, `fallback=<states>`) are read from
 * `message_fallbacks` (message-list.ts, pageOfFallbacks), the others probe it per row. Each must
 * answer the same messages, order, pages and counts either way, with every other filter applied.
 */

let database: Awaited<ReturnType<typeof createTestDatabase>>
let lists: ReturnType<typeof createDb>
let keyA: string
let keyB: string
/** Key A's messages by name, oldest first; b1 is key B's. */
const ids: Record<string, string> = {}

const MINUTE = 60_000
const base = Date.now() - 3_600_000

async function createKey(name: string) {
  const [row] = await database.sql<{ id: string }[]>`
    insert into api_keys (key_hash, key_prefix, environment, client_name, email, scopes, status)
    values (${`hash-${name}`}, ${`pre-${name}`}, 'development', ${name}, 'test@dispatch.local', '{read:messages}', 'approved')
    returning id`
  return row?.id as string
}

/** A message accepted `minute` minutes after the base, with a fallback in `state` when given. */
async function message(
  name: string,
  key: string,
  minute: number,
  status: string,
  fallback?: string,
  phone = '+5511900000001',
) {
  const accepted = new Date(base + minute * MINUTE)
  // updated_at runs against accepted_at, so the two orders differ.
  const updated = new Date(base + (100 - minute) * MINUTE)
  const [row] = await database.sql<{ id: string }[]>`
    insert into messages (id, api_key_id, type, phone, payload, status, accepted_at, updated_at)
    values (gen_random_uuid(), ${key}, 'text', ${phone}, '{}', ${status}, ${accepted}, ${updated})
    returning id`
  const id = row?.id as string
  ids[name] = id
  if (fallback)
    await database.sql`
      insert into message_fallbacks (message_id, accepted_at, api_key_id, reason, state, decided_at)
      values (${id}, ${accepted}, ${key}, 'whatsapp_undeliverable', ${fallback}, ${accepted})`
}

beforeAll(async () => {
  database = await createTestDatabase()
  keyA = await createKey('a')
  keyB = await createKey('b')
  await message('m1', keyA, 1, 'failed', 'sent', '+5511900000009')
  await message('m2', keyA, 2, 'failed', 'sent')
  await message('m3', keyA, 3, 'failed', 'failed')
  await message('m4', keyA, 4, 'delivered')
  // WhatsApp's delivered came after the SMS was committed: both channels, the SMS recorded.
  await message('m5', keyA, 5, 'delivered', 'sent')
  await message('m6', keyA, 6, 'delivered', 'withdrawn')
  await message('b1', keyB, 7, 'failed', 'sent')
  await database.sql`analyze`
  lists = createDb(database.url, { max: 1, genericPlans: true })
})
afterAll(async () => {
  await lists?.close()
  await database?.drop()
})

const names = (rows: { id: string }[]) =>
  rows.map((row) => Object.entries(ids).find(([, id]) => id === row.id)?.[0] ?? row.id)

const keyList = async (extra: Partial<MessageListQuery>, key = () => keyA) => {
  const result = await listMessages(lists.db, key(), {
    page: 1,
    take: 50,
    order: 'DESC',
    orderField: 'createdAt',
    ...extra,
  })
  return { names: names(result.rows), count: result.itemCount, exact: result.itemCountExact }
}
const adminList = async (extra: Partial<AdminMessageListQuery>) => {
  const result = await listAdminMessages(lists.db, {
    page: 1,
    take: 50,
    order: 'DESC',
    orderField: 'createdAt',
    ...extra,
  } as AdminMessageListQuery)
  return { names: names(result.rows), count: result.itemCount }
}

describe("a key's list by channel and fallback", () => {
  it('channel=sms: the messages whose SMS went, newest first, counted, of this key only', async () => {
    expect(await keyList({ channel: 'sms' })).toEqual({ names: ['m5', 'm2', 'm1'], count: 3, exact: true })
    expect((await keyList({ channel: 'sms', order: 'ASC' })).names).toEqual(['m1', 'm2', 'm5'])
    expect((await keyList({ channel: 'sms' }, () => keyB)).names).toEqual(['b1'])
  })

  it('pages, and orders by updatedAt', async () => {
    expect(await keyList({ channel: 'sms', take: 2, page: 2 })).toEqual({
      names: ['m1'],
      count: 3,
      exact: true,
    })
    expect((await keyList({ channel: 'sms', orderField: 'updatedAt' })).names).toEqual(['m1', 'm2', 'm5'])
  })

  it('applies the other filters to the messages', async () => {
    expect((await keyList({ channel: 'sms', status: ['failed'] })).names).toEqual(['m2', 'm1'])
    expect((await keyList({ channel: 'sms', status: ['delivered', 'read'] })).names).toEqual(['m5'])
    expect((await keyList({ channel: 'sms', phone: '+5511900000009' })).names).toEqual(['m1'])
    const window = await listMessages(
      lists.db,
      keyA,
      { page: 1, take: 50, order: 'DESC', orderField: 'createdAt', channel: 'sms' },
      { from: new Date(base + 1.5 * MINUTE).toISOString() },
    )
    expect(names(window.rows)).toEqual(['m5', 'm2'])
  })

  it('fallback=<states>, and with channel=sms only the states an SMS went in', async () => {
    expect((await keyList({ fallback: ['failed', 'withdrawn'] })).names).toEqual(['m6', 'm3'])
    expect((await keyList({ fallback: ['sent', 'failed'], channel: 'sms' })).names).toEqual([
      'm5',
      'm2',
      'm1',
    ])
    expect(await keyList({ fallback: ['failed'], channel: 'sms' })).toEqual({
      names: [],
      count: 0,
      exact: true,
    })
  })

  it('channel=whatsapp and fallback=none keep the others, read from the key’s messages', async () => {
    expect((await keyList({ channel: 'whatsapp' })).names).toEqual(['m6', 'm4', 'm3'])
    expect((await keyList({ fallback: ['none'] })).names).toEqual(['m4'])
    expect((await keyList({ fallback: ['none', 'failed'] })).names).toEqual(['m4', 'm3'])
    // Counted in the key's index order (`countsAlongKeyIndex`): the whole list, past a short page.
    expect(await keyList({ channel: 'whatsapp', take: 1 })).toEqual({ names: ['m6'], count: 3, exact: true })
    expect(await keyList({ fallback: ['none'], take: 1 })).toEqual({ names: ['m4'], count: 1, exact: true })
    expect(await keyList({ channel: 'whatsapp', status: ['delivered'], take: 1 })).toEqual({
      names: ['m6'],
      count: 2,
      exact: true,
    })
  })
})

describe("the admins' list by channel and fallback", () => {
  it('across keys, and of one key', async () => {
    expect(await adminList({ channel: 'sms' })).toEqual({ names: ['b1', 'm5', 'm2', 'm1'], count: 4 })
    expect((await adminList({ channel: 'sms', apiKeyId: keyB })).names).toEqual(['b1'])
    expect((await adminList({ channel: 'sms', apiKeyId: keyA.toUpperCase() })).names).toEqual([
      'm5',
      'm2',
      'm1',
    ])
    expect((await adminList({ fallback: ['sent'], status: ['failed'] })).names).toEqual(['b1', 'm2', 'm1'])
    expect((await adminList({ channel: 'whatsapp' })).names).toEqual(['m6', 'm4', 'm3'])
  })
})
