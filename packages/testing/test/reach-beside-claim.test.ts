import { GIVE_BACK_REACH_SCRIPT, PEEK_REACH_SCRIPT, REACH_BESIDE_CLAIM_SCRIPT } from '@dispatch/runtime'
import { defineLuaCommand } from '@dispatch/runtime/lua-scripts'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { testQueuePrefix, testRedisUrl } from '../src/database.ts'

/**
 * Delivery's count against the messaging limit (packages/runtime/src/lua/messaging-limit/
 * reachBesideClaim.lua), as the worker calls it for a turn's deliveries to one portfolio: what it
 * answers each recipient and what the portfolio's reach (its exact set and its recent list) holds
 * after; and the door's read of the same keys (peekReach-2.lua).
 */
const redis = new Redis(testRedisUrl())
const count = defineLuaCommand(redis, REACH_BESIDE_CLAIM_SCRIPT)
const peek = defineLuaCommand(redis, PEEK_REACH_SCRIPT)
afterAll(() => redis.disconnect())

const DAY = 86_400_000
let run = 0
/** A portfolio of its own per test: its reach's key and a window key per recipient. */
function portfolio() {
  const base = `${testQueuePrefix()}:reach-test:${process.pid}:${++run}`
  const reach = `${base}:reach`
  const recent = `${reach}:recent`
  const window = (member: string) => `${base}:window:${member}`
  const raw = (now: number, limit: number, members: string[]) =>
    count(
      members.length + 2,
      ...members.map(window),
      reach,
      recent,
      now,
      DAY,
      limit,
      DAY,
      ...members,
    ) as Promise<number[] | number>
  /** One answer per recipient (every one appended is answered by the single number 1). */
  const call = async (now: number, limit: number, members: string[]) => {
    const answers = await raw(now, limit, members)
    return typeof answers === 'number' ? members.map(() => answers) : answers
  }
  /** The recent list's entries, as [time, hash]. */
  const pairs = async () =>
    (await redis.lrange(recent, 0, -1)).map((entry) => {
      const [time, hash] = entry.split(' ')
      return [Number(time), hash]
    })
  return { reach, recent, window, raw, call, pairs }
}

describe('reachBesideClaim.lua', () => {
  it('far from the limit appends recipients outside their window to the recent list, none whose window is open', async () => {
    const p = portfolio()
    const now = Date.now()
    await redis.set(p.window('open'), String(now - 1000))
    await redis.set(p.window('closed'), String(now - DAY - 1))
    expect(await p.call(now, 10, ['open', 'closed', 'new', 'new'])).toEqual([-(now - 1000), 1, 1, 1])
    expect(await p.pairs()).toEqual([
      [now, 'closed'],
      [now, 'new'],
      [now, 'new'],
    ])
    expect(await redis.exists(p.reach)).toBe(0)
    expect(await redis.pttl(p.recent)).toBeGreaterThan(DAY - 60_000)
    // Every recipient appended (no window open): one number for them all, not a list.
    expect(await p.raw(now, 10, ['x', 'y'])).toBe(1)
    expect(await redis.llen(p.recent)).toBe(5)
  })

  it('near the limit folds the list into the set, each recipient once at their latest time, then counts exactly', async () => {
    const p = portfolio()
    const now = Date.now()
    await redis.zadd(p.reach, now - 9000, 'c')
    await redis.rpush(p.recent, `${now - 8000} a`, `${now - 7000} b`, `${now - 6000} a`)
    // The set and the list as if each pair were a recipient: 4, over a limit of 4 with one more.
    expect(await p.call(now, 4, ['a', 'd'])).toEqual([0, 1])
    expect(await redis.llen(p.recent)).toBe(0)
    expect(await redis.zrange(p.reach, '0', '-1', 'WITHSCORES')).toEqual([
      'c',
      String(now - 9000),
      'b',
      String(now - 7000),
      'a',
      String(now),
      'd',
      String(now),
    ])
    // Exact from then on: a fifth recipient is held until the oldest leaves the window.
    expect(await p.call(now + 1, 4, ['e', 'b'])).toEqual([now - 9000 + DAY, 0])
  })

  it('drops the pairs that left the window before judging how far the limit is', async () => {
    const p = portfolio()
    const now = Date.now()
    await redis.rpush(p.recent, `${now - DAY - 5} gone`, `${now - DAY} gone-too`, `${now - 10} kept`)
    expect(await p.call(now, 2, ['x'])).toEqual([1])
    expect(await p.pairs()).toEqual([
      [now - 10, 'kept'],
      [now, 'x'],
    ])
  })

  it('gives back a recipient appended far from the limit, or added near it, at the time counted', async () => {
    const p = portfolio()
    const now = Date.now()
    const giveBack = defineLuaCommand(redis, GIVE_BACK_REACH_SCRIPT)
    await p.call(now - 10, 10, ['a', 'b'])
    await p.call(now, 10, ['a'])
    // Given back at the time it was counted: a's entry of `now`, not the one before it.
    expect(await giveBack(p.reach, p.recent, now, 'a')).toBe(1)
    expect(await p.pairs()).toEqual([
      [now - 10, 'a'],
      [now - 10, 'b'],
    ])
    expect(await giveBack(p.reach, p.recent, now, 'b')).toBe(0)
    await redis.zadd(p.reach, now, 'c')
    expect(await giveBack(p.reach, p.recent, now, 'c')).toBe(1)
    expect(await redis.zcard(p.reach)).toBe(0)
  })

  it('lets the door find a recipient still in the list near the limit: its read folds it first', async () => {
    const p = portfolio()
    const now = Date.now()
    await p.call(now - 5000, 100, ['a', 'b', 'a'])
    const cutoff = now - DAY
    // Far from the limit (3 entries and 2 recipients under 100) the door's read folds nothing.
    expect(await peek(p.reach, p.recent, cutoff, DAY, 100, 'a', 'z')).toEqual([3, now - 5000, 0, 0])
    expect(await redis.llen(p.recent)).toBe(3)
    // Near it (3 + 2 past 4): folded, each recipient once.
    expect(await peek(p.reach, p.recent, cutoff, DAY, 4, 'a', 'z')).toEqual([2, now - 5000, now - 5000, 0])
    expect(await redis.llen(p.recent)).toBe(0)
  })

  it('at the limit answers when room frees, and still lets those reached before through', async () => {
    const p = portfolio()
    const now = Date.now()
    await redis.zadd(p.reach, now - 3000, 'first', now - 2000, 'second')
    expect(await p.call(now, 3, ['second', 'third', 'fourth', 'fifth', 'third'])).toEqual([
      0,
      1,
      now - 3000 + DAY,
      now - 3000 + DAY,
      0,
    ])
    expect((await redis.zrange(p.reach, '0', '-1')).sort()).toEqual(['first', 'second', 'third'])
    // Who left the window is dropped first, making room: far enough again to append.
    expect(await p.call(now - 3000 + DAY, 3, ['fourth'])).toEqual([1])
    expect((await redis.zrange(p.reach, '0', '-1')).sort()).toEqual(['second', 'third'])
    expect(await p.pairs()).toEqual([[now - 3000 + DAY, 'fourth']])
  })

  it('takes a turn of thousands of recipients in one call', async () => {
    const p = portfolio()
    const now = Date.now()
    const members = Array.from({ length: 5000 }, (_, i) => `m${i}`)
    await redis.set(p.window('m4999'), String(now))
    const answers = await p.call(now, 4000, members)
    expect(answers.filter((a) => a === 1)).toHaveLength(4000)
    expect(answers.slice(4000, 4999).every((a) => a === now + DAY)).toBe(true)
    expect(answers[4999]).toBe(-now)
    expect(await redis.zcard(p.reach)).toBe(4000)
  })
})
