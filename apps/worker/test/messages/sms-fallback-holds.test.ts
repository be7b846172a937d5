import { randomUUID } from 'node:crypto'
import { type MessageJob, smsFallbackHoldKey, UNDELIVERABLE_HOLD_SECONDS } from '@dispatch/contracts'
import { queuePrefix } from '@dispatch/runtime'
import {
  type LocalRedisCluster,
  redisClusterMissing,
  startRedisCluster,
  testQueuePrefix,
  testRedisUrl,
} from '@dispatch/testing'
import { Cluster, Redis, type RedisOptions } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SmsFallbackTimers } from '../../src/messages/fallback-timer.ts'

/**
 * The 131026 holds of messages WhatsApp took in one turn (a bundle's, fallback-timer.ts): written
 * together in one call on the lanes' auto-pipelined connection, each with its own message's SMS,
 * and each arm told when its hold could not be written. On a Redis Cluster, in one call when the
 * prefix's hash tag holds them on one slot (the lanes' prefix), a SET each when it has none.
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

const clusterMissing = redisClusterMissing()
describe.skipIf(clusterMissing)(
  `on a Redis Cluster${clusterMissing ? ` (skipped: ${clusterMissing})` : ''}`,
  () => {
    let cluster: LocalRedisCluster
    const connected: Cluster[] = []
    const connect = (options: { enableAutoPipelining?: boolean } = {}) => {
      const redis = new Cluster([{ host: '127.0.0.1', port: cluster.ports[0] as number }], options)
      connected.push(redis)
      return redis
    }
    beforeAll(async () => {
      cluster = await startRedisCluster()
    }, 120_000)
    afterAll(async () => {
      for (const redis of connected) redis.disconnect()
      await cluster?.stop()
    })

    it.each([
      // The lanes' prefix on a Cluster: the timers' queue's {…} tag holds every hold on one slot.
      [
        'in one call, on the slot of the prefix',
        queuePrefix({ QUEUE_PREFIX: 'dispatch', REDIS_CLUSTER: true }, 'sms-fallback-timers'),
      ],
      // A prefix without a tag: the holds spread over the slots, a SET each.
      ['a SET each, their keys over the slots', 'dispatch-untagged'],
    ])("a turn's holds are each written: %s", async (_, clusterPrefix) => {
      const holds = connect({ enableAutoPipelining: true })
      const timers = new SmsFallbackTimers(connect(), clusterPrefix, holds)
      const messages = Array.from({ length: 20 }, (_, i) => message(`+49151122${1000 + i}`, `SMS ${i}`))
      const sentAt = new Date()
      expect(await Promise.all(messages.map((m) => timers.arm(m, sentAt)))).toEqual(messages.map(() => true))
      for (const [i, m] of messages.entries()) {
        const key = smsFallbackHoldKey(clusterPrefix, m.messageId)
        expect(JSON.parse((await holds.get(key)) as string)).toMatchObject({
          messageId: m.messageId,
          to: `+49151122${1000 + i}`,
          text: `SMS ${i}`,
          undeliverableOnly: true,
        })
        expect(await holds.ttl(key)).toBeGreaterThan(UNDELIVERABLE_HOLD_SECONDS - 60)
      }
      await timers.close()
    })
  },
)
