import { senderOfQueue } from '@dispatch/contracts'

/**
 * Where the service's keys live in Redis (docs/redis-and-postgres.md, "Redis Cluster"). A Redis Cluster
 * hashes a key by its first `{…}` (its hash tag), or by the whole key without one, and refuses a
 * script or transaction whose keys hash to different slots. So each group of keys used together
 * shares a tag:
 * - a BullMQ queue's keys, by the queue's `prefix` (below);
 * - a sender's fair-admission keys with its BullMQ queue (the admit script reads both): `{senderId}`;
 * - a key's rate window with its daily count (one script): `{apiKeyId}`;
 * - a webhook endpoint's gate keys: `{endpointId}`; its manual retries' counter, alone, has it too;
 * - a key's running webhook replays (one set): `{apiKeyId}`, like its rate.
 * Every other key is used alone. When QUEUE_PREFIX holds a tag itself (`{dispatch}`), it comes
 * first in every key and wins: the whole service is one slot, so one shard.
 */
export interface KeyLayout {
  QUEUE_PREFIX: string
  REDIS_CLUSTER: boolean
}

const HASH_TAG = /\{[^{}]+\}/

/** Whether the prefix carries its own hash tag, which then holds every key of the service. */
export const hasHashTag = (prefix: string) => HASH_TAG.test(prefix)

/**
 * The hash tag of a queue: a sender's queue shares its sender's (that of its fair-admission keys,
 * `fairBase`); any other queue has its name.
 */
export const queueHashTag = (queueName: string): string => senderOfQueue(queueName) ?? queueName

/**
 * The BullMQ `prefix` of a queue: its keys are `<prefix>:<queue>:<state>`. On one Redis server it
 * is QUEUE_PREFIX itself (the layout the service always had, so an upgrade strands no job). On a
 * cluster, unless QUEUE_PREFIX holds a tag, it gains the queue's tag (`dispatch:{acme}`), so each
 * queue sits whole on one slot and the queues spread over the shards.
 */
export function queuePrefix(layout: KeyLayout, queueName: string): string {
  if (!layout.REDIS_CLUSTER || hasHashTag(layout.QUEUE_PREFIX)) return layout.QUEUE_PREFIX
  return `${layout.QUEUE_PREFIX}:{${queueHashTag(queueName)}}`
}

/**
 * One of a BullMQ queue's own keys, `<queue prefix>:<queue>:<state>` (BullMQ's layout), for the
 * few places that read a queue's lists directly: the admit script, and a sender's in-flight count.
 */
export const bullQueueKey = (layout: KeyLayout, queueName: string, state: string) =>
  `${queuePrefix(layout, queueName)}:${queueName}:${state}`

/** The keys of a BullMQ queue that the admit script reads. */
export const bullQueueKeys = (layout: KeyLayout, queueName: string) => ({
  wait: bullQueueKey(layout, queueName, 'wait'),
  prioritized: bullQueueKey(layout, queueName, 'prioritized'),
  meta: bullQueueKey(layout, queueName, 'meta'),
  /** Set by a platform rate limit (130429) for the pause: no admission meanwhile. */
  limiter: bullQueueKey(layout, queueName, 'limiter'),
})
