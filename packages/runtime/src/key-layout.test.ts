import Type from 'typebox'
import { describe, expect, it } from 'vitest'
import { commonEnv, parseEnv } from './env.ts'
import { queuePrefix } from './key-layout.ts'
import { fairKeys } from './message-handoff/fair-queue.ts'

/** Redis Cluster's hash tag of a key: what is between its first `{` and the next `}`, if not empty. */
function hashTag(key: string): string {
  const open = key.indexOf('{')
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1
  return close > open + 1 ? key.slice(open + 1, close) : key
}

describe('key layout', () => {
  it('keeps the historical keys on one Redis server', () => {
    const single = { QUEUE_PREFIX: 'dispatch', REDIS_CLUSTER: false }
    expect(queuePrefix(single, 'messages.acme')).toBe('dispatch')
    expect(queuePrefix(single, 'email')).toBe('dispatch')
  })

  it("on a cluster, tags each queue: a sender's queue with its fair-admission keys' tag", () => {
    const cluster = { QUEUE_PREFIX: 'dispatch', REDIS_CLUSTER: true }
    for (const [sender, queue] of [
      ['acme', 'messages.acme'],
      ['default', 'messages'],
    ] as const) {
      const queueKey = `${queuePrefix(cluster, queue)}:${queue}:wait`
      expect(hashTag(queueKey)).toBe(hashTag(fairKeys('dispatch', sender).jobs))
    }
    expect(hashTag(`${queuePrefix(cluster, 'email')}:email:wait`)).toBe('email')
    expect(hashTag(`${queuePrefix(cluster, 'webhooks')}:webhooks:wait`)).toBe('webhooks')
  })

  it('on a cluster with a tagged QUEUE_PREFIX, every key shares the prefix tag', () => {
    const tagged = { QUEUE_PREFIX: '{dispatch}', REDIS_CLUSTER: true }
    expect(queuePrefix(tagged, 'messages.acme')).toBe('{dispatch}')
    expect(hashTag(fairKeys('{dispatch}', 'acme').jobs)).toBe('dispatch')
  })
})

describe('Redis settings', () => {
  const schema = Type.Object(commonEnv)
  it('takes one hash tag in QUEUE_PREFIX, not a broken or second one', () => {
    expect(parseEnv(schema, { QUEUE_PREFIX: '{dispatch}' }).QUEUE_PREFIX).toBe('{dispatch}')
    expect(parseEnv(schema, { QUEUE_PREFIX: 'prod{eu}' }).QUEUE_PREFIX).toBe('prod{eu}')
    for (const bad of ['dis{patch', '{a}{b}', '{}', 'a:b', 'a b']) {
      expect(() => parseEnv(schema, { QUEUE_PREFIX: bad }), bad).toThrow(/QUEUE_PREFIX/)
    }
  })

  it('takes several REDIS_URLs only for a cluster, and says how to fix it', () => {
    const nodes = 'redis://10.0.0.1:7000,redis://10.0.0.2:7000'
    expect(() => parseEnv(schema, { REDIS_URL: nodes })).toThrow(
      /REDIS_URL: names several servers; set REDIS_CLUSTER=true/,
    )
    expect(parseEnv(schema, { REDIS_URL: nodes, REDIS_CLUSTER: 'true' })).toMatchObject({
      REDIS_URL: nodes,
      REDIS_CLUSTER: true,
    })
  })
})
