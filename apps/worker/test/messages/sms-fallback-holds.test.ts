import { randomUUID } from 'node:crypto'
import { type MessageJob, smsFallbackHoldKey } from '@dispatch/contracts'
import { testQueuePrefix, testRedisUrl } from '@dispatch/testing'
import { Redis, type RedisOptions } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SmsFallbackTimers, UNDELIVERABLE_HOLD_SECONDS } from '../../src/messages/fallback-timer.ts'

/**
 * The 131026 holds of messages WhatsApp took in one turn (a bundle's, fallback-timer.ts): written
 * together in one call on the lanes' auto-pipelined connection, each with its own message's SMS,
 * and each arm told when its hold could not be written.
 */
const prefix = testQueuePrefix()
const clients: Redis[] = []
const client = (options: RedisOptions = {}) => {
  const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null, ...options })
  clients.push(redis)
  return redis
}
let reader: Redis
/** The holds' keys this file may write, deleted after it. */
const written: string[] = []

beforeAll(() => {
  reader = client()
})
afterAll(async () => {
  if (written.length > 0) await reader.del(...written)
  for (const redis of clients) redis.disconnect()
})

const message = (phone: string, text: string): MessageJob => {
  const messageId = randomUUID()
  written.push(smsFallbackHoldKey(prefix, messageId))
  return {
    messageId,
    apiKeyId: randomUUID(),
    acceptedAt: new Date().toISOString(),
    message: { type: 'text', body: { phone, text: 'Your order has shipped' } },
    fallback: { sms: { text } },
  }
}

describe("a turn's holds", () => {
  it('are each written, with its own number and text, kept a day', async () => {
    const timers = new SmsFallbackTimers(client(), prefix, client({ enableAutoPipelining: true }))
    const messages = Array.from({ length: 20 }, (_, i) => message(`+49151120${1000 + i}`, `SMS ${i}`))
    const sentAt = new Date()
    // A bundle's messages, taken by WhatsApp in the same turn.
    expect(await Promise.all(messages.map((m) => timers.arm(m, sentAt)))).toEqual(messages.map(() => true))
    for (const [i, m] of messages.entries()) {
      const key = smsFallbackHoldKey(prefix, m.messageId)
      expect(JSON.parse((await reader.get(key)) as string)).toEqual({
        messageId: m.messageId,
        acceptedAt: m.acceptedAt,
        to: `+49151120${1000 + i}`,
        text: `SMS ${i}`,
        sentAt: sentAt.toISOString(),
        undeliverableOnly: true,
      })
      expect(await reader.ttl(key)).toBeGreaterThan(UNDELIVERABLE_HOLD_SECONDS - 60)
    }
    // A lone hold in its turn, and one armed again (its job run again): the same hold.
    const lone = messages[0] as MessageJob
    expect(await timers.arm(lone, sentAt)).toBe(true)
    expect(
      JSON.parse((await reader.get(smsFallbackHoldKey(prefix, lone.messageId))) as string),
    ).toMatchObject({
      to: '+491511201000',
      text: 'SMS 0',
    })
    await timers.close()
  })

  it('not written (Redis refuses): each arm of the turn rejects, so each job runs again', async () => {
    // Never connected, and failing fast as the lanes' connections do: every command refused.
    const away = client({ enableAutoPipelining: true, enableOfflineQueue: false, lazyConnect: true })
    const timers = new SmsFallbackTimers(client(), prefix, away)
    const messages = Array.from({ length: 5 }, (_, i) => message(`+49151121${1000 + i}`, `SMS ${i}`))
    const arms = await Promise.allSettled(messages.map((m) => timers.arm(m, new Date())))
    expect(arms.map((arm) => arm.status)).toEqual(messages.map(() => 'rejected'))
    for (const m of messages) expect(await reader.exists(smsFallbackHoldKey(prefix, m.messageId))).toBe(0)
    await timers.close()
  })
})
