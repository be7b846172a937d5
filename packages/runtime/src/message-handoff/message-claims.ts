import { join } from 'node:path'
import type { Cluster, Redis } from 'ioredis'
import { evalLuaScript, luaScripts } from '../lua-scripts.ts'

/**
 * Who a message belongs to while it is in flight: the first worker to take it, or its sender's
 * cancel. One Redis key per message, set once (`NX`) by whichever comes first, so a cancel and a
 * worker racing for the same message end with exactly one winner: `worker` (the message goes out;
 * the cancel is refused) or `cancel` (no platform call is ever made).
 *
 * Redis holds only what is in flight (docs/durability.md, "How long a claim stays"): once a message's final outcome
 * (`sent`, `failed`, `expired`, `canceled`) is committed in Postgres, the recorder shortens its claim
 * to `MESSAGE_CLAIM_KEEP_MS` (`releaseMessageClaims`), and from then on the record answers for it:
 * a cancel that finds the claim gone reads the record again and is refused, and a job that may
 * follow another (run again, or handed out again: `readmitted`) reads the record before sending.
 */
export const messageClaimKey = (prefix: string, messageId: string) => `${prefix}:messages:claim:${messageId}`

export type MessageClaim = 'worker' | 'cancel'

/**
 * How long a claim is kept while its outcome is not in Postgres: past the moment the message can no
 * longer be taken (its expiry), and a day more, for a record delayed by a Postgres outage. Messages
 * without an expiry get a day. A recorded outcome shortens it (`MESSAGE_CLAIM_KEEP_MS`).
 */
export function messageClaimTtlMs(expiresAt: string | undefined, now: number): number {
  const left = expiresAt ? Date.parse(expiresAt) - now : 0
  return Math.max(0, left) + 24 * 3600 * 1000
}

/**
 * How long a claim stays once the message's final outcome is committed in Postgres (the worker's
 * `MESSAGE_CLAIM_KEEP_MS`): duplicates close behind (a second bundle of an admission run again, a
 * cancel already past its read of the record) still meet it, and cost no Postgres read.
 */
export const MESSAGE_CLAIM_KEEP_MS = 60_000

/** The outcomes after which no job of the message sends it: its record answers from then on. */
export const FINAL_OUTCOMES: ReadonlySet<string> = new Set(['sent', 'failed', 'expired', 'canceled'])

/** Releases a batch of claims in one command, off a Cluster (lua/claims/releaseClaims.lua). */
const claimScripts = luaScripts(join(import.meta.dirname, 'lua/claims'), ['releaseClaims', 'handOverClaim'])
export const RELEASE_CLAIMS_SCRIPT = claimScripts.releaseClaims

/**
 * Renames a message's claim after the job that takes the message over (lua/claims/handOverClaim-1.lua),
 * when it is free or held by one of `from`: the job it came from, run again, then finds it another's
 * and leaves it. Answers true once the claim is `to`'s; false when a cancel (or another job) holds it.
 */
export async function handOverMessageClaim(
  redis: Redis | Cluster,
  prefix: string,
  message: { messageId: string; expiresAt?: string | undefined },
  from: readonly string[],
  to: string,
): Promise<boolean> {
  const ttl = messageClaimTtlMs(message.expiresAt, Date.now())
  const answer = await evalLuaScript(
    redis,
    claimScripts.handOverClaim,
    messageClaimKey(prefix, message.messageId),
    to,
    ttl,
    ...from,
  )
  return answer === 1
}

/**
 * Shortens the claims of messages whose final outcome is committed in Postgres to `keepMs` (only
 * ever shortens: `LT`), or deletes them (`keepMs` 0). Off a Cluster one script call for the batch;
 * on a Cluster (the claims sit on many slots) one command per key, sent together by its
 * auto-pipeline.
 */
export async function releaseMessageClaims(
  redis: Redis | Cluster,
  prefix: string,
  messageIds: Iterable<string>,
  keepMs: number,
): Promise<void> {
  const keys = [...messageIds].map((id) => messageClaimKey(prefix, id))
  if (keys.length === 0) return
  if (!redis.isCluster) {
    // EVAL, its text each time (once a batch): a defined command (EVALSHA) queued on an
    // auto-pipelined connection makes ioredis load it inside the pipeline, which loses replies.
    await evalLuaScript(redis, RELEASE_CLAIMS_SCRIPT, keys.length, ...keys, keepMs)
    return
  }
  await Promise.all(keys.map((key) => (keepMs > 0 ? redis.pexpire(key, keepMs, 'LT') : redis.del(key))))
}
