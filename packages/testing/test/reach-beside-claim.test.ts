import { REACH_BESIDE_CLAIM_SCRIPT } from '@dispatch/runtime'
import { defineLuaCommand } from '@dispatch/runtime/lua-scripts'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { testQueuePrefix, testRedisUrl } from '../src/database.ts'

/**
 * Delivery's count against the messaging limit (packages/runtime/src/lua/messaging-limit/
 * reachBesideClaim.lua), as the worker calls it for a turn's deliveries to one portfolio: what it
 * answers each recipient and what the portfolio's reach holds after.
 */
const redis = new Redis(testRedisUrl())
const count = defineLuaCommand(redis, REACH_BESIDE_CLAIM_SCRIPT)
afterAll(() => redis.disconnect())

const DAY = 86_400_000
let run = 0
/** A portfolio of its own per test: its reach's key and a window key per recipient. */
function portfolio() {
  const base = `${testQueuePrefix()}:reach-test:${process.pid}:${++run}`
  const reach = `${base}:reach`
  const window = (member: string) => `${base}:window:${member}`
  const call = (now: number, limit: number, members: string[]) =>
    count(members.length + 1, ...members.map(window), reach, now, DAY, limit, DAY, ...members) as Promise<
      number[]
    >
  return { reach, window, call }
}

describe('reachBesideClaim.lua', () => {
  it('counts recipients outside their window once each, and none whose window is open', async () => {
    const p = portfolio()
    const now = Date.now()
    await redis.set(p.window('open'), String(now - 1000))
    await redis.set(p.window('closed'), String(now - DAY - 1))
    expect(await p.call(now, 10, ['open', 'closed', 'new', 'new'])).toEqual([-(now - 1000), 1, 1, 0])
    expect(await redis.zrange(p.reach, '0', '-1')).toEqual(['closed', 'new'])
    // Reached again later: not added, its time refreshed.
    expect(await p.call(now + 5, 10, ['new'])).toEqual([0])
    expect(Number(await redis.zscore(p.reach, 'new'))).toBe(now + 5)
    expect(await redis.pttl(p.reach)).toBeGreaterThan(DAY - 60_000)
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
    // Who left the window is dropped first, making room.
    expect(await p.call(now - 3000 + DAY, 3, ['fourth'])).toEqual([1])
    expect((await redis.zrange(p.reach, '0', '-1')).sort()).toEqual(['fourth', 'second', 'third'])
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
