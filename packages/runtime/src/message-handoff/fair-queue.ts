import { join } from 'node:path'
import type { MessagePriority } from '@dispatch/contracts'
import { luaScripts } from '../lua-scripts.ts'

const scripts = luaScripts(join(import.meta.dirname, 'lua/fair-queue'), ['fairEnqueue', 'fairAdmit'])

/**
 * Fair admission (docs/senders.md). The API does not add a
 * message to its sender's BullMQ queue: it stores the job in the sender's `jobs` hash and its id at
 * the tail of a list per (priority level, key), and puts the key on the level's ring when that list
 * was empty. A worker's admitter then moves about one window of the sender's rate at a time into the
 * sender's queue, taking one message per key in turn round the ring (round-robin, the equal-weight
 * case of deficit round-robin), every `high` before any `normal` before any `low`. So a key with a
 * 100,000-message backlog holds at most its turn, never the queue, and the cost is O(1) per message
 * whatever the number of keys.
 *
 * Every key of one sender shares the `{…}` hash tag of `fairBase`, so the scripts stay on one slot.
 */
export const fairBase = (prefix: string, senderId: string) => `${prefix}:fair:{${senderId}}:`

export const fairKeys = (prefix: string, senderId: string) => {
  const base = fairBase(prefix, senderId)
  return {
    base,
    /** messageId → job JSON, until admitted. */
    jobs: `${base}jobs`,
    /** messageId → job JSON, taken by an admitter and not yet confirmed in the sender's queue. */
    moving: `${base}moving`,
    /** messageId → when it was taken (ms): an admitter that died leaves them to be taken again. */
    movingAt: `${base}moving-at`,
    /** messageId → due time (ms), for scheduled messages. */
    scheduled: `${base}scheduled`,
    /** messageId → the id of the bundle job holding it (message-bundles.ts), until its outcome is recorded. */
    bundled: `${base}bundled`,
    /** Stream of `sent` outcomes not yet written to Postgres (the worker's sent log). */
    sentLog: `${base}sent-log`,
    /** `<score>:<count>`: how far the sweep of stalled jobs' SMS fallbacks read the sender's failed jobs. */
    stalledSwept: `${base}stalled-swept`,
    /** The sender's pace: `tokens` (messages it may still be sent now) and `at` (ms), see fairAdmit-8.lua. */
    pace: `${base}pace`,
    ring: (level: MessagePriority) => `${base}ring:${level}`,
    list: (level: MessagePriority, apiKeyId: string) => `${base}key:${level}:${apiKeyId}`,
  }
}

/** Senders with messages waiting for admission (a hint: admitters also sweep every sender). */
export const fairActiveKey = (prefix: string) => `${prefix}:fair:active`

/** The sender's queue priority of each level: lower goes first. */
export const PRIORITY_RANK: Record<MessagePriority, number> = { high: 1, normal: 2, low: 3 }

/** The most messages one FAIR_ENQUEUE_SCRIPT call takes (Lua's `unpack` has a stack limit). */
export const FAIR_ENQUEUE_MAX = 500

/**
 * The API's side (lua/fair-queue/fairEnqueue-2.lua): stores several messages of one sender in one
 * call, each key's outstanding bound counted in the same call.
 */
export const FAIR_ENQUEUE_SCRIPT = scripts.fairEnqueue

/**
 * How the admitter adds one tick's messages to the sender's queue (the script's second answer).
 * BullMQ takes its plain wait list before its prioritized set, so a plain add is a priority above
 * every ranked one, and costs 3 Redis commands less per message:
 * - `plain`: every message of the tick is of one level, nothing is prioritized in the queue and its
 *   wait list is empty or holds that level only: no BullMQ priority is needed to keep the order;
 * - `ranked`: levels mix; each message gets its level's BullMQ priority (PRIORITY_RANK);
 * - `jump`: the tick's first `jumpCount` messages are of a level above the plain ones already
 *   waiting (a `high` arriving during a `normal` flood): they go to the front of the wait list
 *   (BullMQ's `lifo`, added in reverse so they keep their order), the rest ranked.
 */
export const ADMIT_MODE = { ranked: 0, plain: 1, jump: 2 } as const

/** The admitter's side, one round trip per sender and tick (lua/fair-queue/fairAdmit-8.lua). */
export const FAIR_ADMIT_SCRIPT = scripts.fairAdmit
