import { recipientOf } from '@dispatch/contracts'
import {
  GIVE_BACK_REACH_SCRIPT,
  MESSAGING_LIMIT_WINDOW_MS,
  portfolioReachKey,
  portfolioRecentKey,
  REACH_BESIDE_CLAIM_SCRIPT,
  RECENT_REACH_MAX,
  SERVICE_WINDOW_MS,
  serviceWindowKey,
  WINDOW_KNOWN_AT_ACCEPT_MS,
} from '@dispatch/runtime'
import { type LuaCall, scriptCall } from '@dispatch/runtime/lua-scripts'
import { type RedisClient, turnBatched } from '@dispatch/runtime/redis'
import { knownOpenWindow, rememberOpenWindow } from '../recipient-reads.ts'
import type { MessageDelivery } from './types.ts'

/**
 * Whether this message may count against its portfolio's messaging limit: a template through a
 * sender with a finite limit under `hold` or `refuse`. On one Redis server it is counted beside the
 * claim (`countBesideClaim`); on a Cluster its recipient's window is read beside the claim
 * (gates.ts) and it is counted after the gates, as a free-form message's fallback template is
 * (sent when its window is closed under `enforce`).
 */
export function countsAgainstLimit({ data, lane }: MessageDelivery): boolean {
  return lane.settings.messagingLimit?.tracked === true && data.message.type === 'template'
}

/**
 * What the count beside the claim answered: the window open (not counted); reached (`added`: new
 * in the reach at `at`, given back if the message is then not sent); held until `roomAt`; or not
 * read (Redis failed: sent uncounted, as without a limit).
 */
export type ReachCount =
  | { kind: 'open' }
  | { kind: 'reached'; added: boolean; at: number }
  | { kind: 'held'; roomAt: number }
  | { kind: 'unread'; error: unknown }

const OPEN: Promise<ReachCount> = Promise.resolve({ kind: 'open' })

/** One recipient to count beside its claim: the portfolio's keys, its limit, the window, the hash. */
type BesideCall = {
  key: string
  recent: string
  limit: number
  /**
   * The window's key: '' for a window known closed (read at accept, `windowClosesAt`), built only
   * if the script is to read it.
   */
  window: string
  member: string
  prefix: string
  number: string
  recipient: string
}

/** The call's window key, built for a window known closed only when the script is to read it. */
const windowKeyOf = (call: BesideCall) =>
  call.window || serviceWindowKey(call.prefix, call.number, call.recipient)

/**
 * Until when each portfolio (by its reach key) is counted by the script only: an append without one
 * found it at its limit. Then, every `TRIM_EVERY_MS`, one turn's count goes through the script,
 * which drops from the list what left the 24 hours (an append alone never trims).
 */
const scriptOnlyUntil = new Map<string, number>()
const NEAR_RECHECK_MS = 1000
const TRIM_EVERY_MS = 60_000
const trimmedAt = new Map<string, number>()

/** Whether a turn's recipients known outside their window may be appended without a script. */
function mayAppend(key: string, now: number): boolean {
  if ((scriptOnlyUntil.get(key) ?? 0) > now) return false
  const trimmed = trimmedAt.get(key)
  if (trimmed !== undefined && now - trimmed < TRIM_EVERY_MS) return true
  if (trimmedAt.size >= 10_000) trimmedAt.clear()
  trimmedAt.set(key, now)
  return false
}

/**
 * Each connection's counts beside the claims: the recipients whose window must be read, gathered per
 * turn of the event loop (a bundle's messages and other jobs') to one portfolio under one limit, in
 * one call of reachBesideClaim.lua, which reads their windows itself; those known outside their
 * window (`windowClosesAt`), gathered per callback so their append joins the auto-pipeline the
 * claims wait in (ioredis holds a connection's next pipeline until the running one's replies are
 * in: a turn's end would cost them a round trip).
 */
type Beside = {
  count: (call: BesideCall) => Promise<ReachCount>
  /** Recipients known outside their window: gathered per callback, appended in the claims' pipeline. */
  countKnown: (call: BesideCall) => Promise<ReachCount>
  giveBack: LuaCall
}
const besides = new WeakMap<RedisClient, Beside>()
function besideOf(redis: RedisClient): Beside {
  let beside = besides.get(redis)
  if (!beside) {
    const script = scriptCall(redis, REACH_BESIDE_CLAIM_SCRIPT)
    const giveBack = scriptCall(redis, GIVE_BACK_REACH_SCRIPT)
    /** `known`: every window known closed (`countKnown`'s calls), so far from the limit an append. */
    const countTurn = async (calls: BesideCall[], known: boolean) => {
      const answers: ReachCount[] = new Array(calls.length)
      const now = Date.now()
      // One answer object for all the recipients added in this call, one for all reached before
      // (read only, never changed).
      const added: ReachCount = { kind: 'reached', added: true, at: now }
      const before: ReachCount = { kind: 'reached', added: false, at: now }
      const countGroup = async (group: BesideCall[], places: number[] | undefined) => {
        const first = group[0] as BesideCall
        const replies = (await script(
          group.length + 2,
          ...group.map(windowKeyOf),
          first.key,
          first.recent,
          now,
          MESSAGING_LIMIT_WINDOW_MS,
          first.limit,
          SERVICE_WINDOW_MS,
          ...group.map((call) => call.member),
        )) as number[] | number
        // Every recipient appended, far from the limit: one number for them all.
        if (replies === 1) {
          for (let i = 0; i < group.length; i++) answers[places ? (places[i] as number) : i] = added
          return
        }
        if (!Array.isArray(replies)) throw new Error(`unexpected reach count reply: ${replies}`)
        for (let i = 0; i < group.length; i++) {
          const answer = Number(replies[i] ?? 0)
          let counted: ReachCount
          if (answer < 0) {
            rememberOpenWindow(windowKeyOf(group[i] as BesideCall), -answer, now)
            counted = { kind: 'open' }
          } else if (answer === 1) counted = added
          else if (answer === 0) counted = before
          else counted = { kind: 'held', roomAt: answer }
          answers[places ? (places[i] as number) : i] = counted
        }
      }
      // Recipients whose window the accept path found closed, far from the limit: appended to the
      // recent list by one RPUSH, no script (its call costs Redis more than the appends); the
      // list's length it answers, with the set's size, says whether they fit. Past the limit they
      // are taken back and counted by the script, exactly.
      const appendGroup = async (group: BesideCall[], places: number[] | undefined) => {
        const first = group[0] as BesideCall
        const stamp = `${now} `
        const entries = group.map((call) => stamp + call.member)
        const [length, , reach] = await Promise.all([
          redis.rpush(first.recent, ...entries),
          redis.pexpire(first.recent, MESSAGING_LIMIT_WINDOW_MS),
          redis.zcard(first.key),
        ])
        if (length <= RECENT_REACH_MAX && length + reach <= first.limit) {
          for (let i = 0; i < group.length; i++) answers[places ? (places[i] as number) : i] = added
          return
        }
        if (scriptOnlyUntil.size >= 10_000) scriptOnlyUntil.clear()
        scriptOnlyUntil.set(first.key, now + NEAR_RECHECK_MS)
        await giveBack(first.key, first.recent, now, ...group.map((call) => call.member))
        await countGroup(group, places)
      }
      const countOrAppend = (group: BesideCall[], places: number[] | undefined) =>
        known && mayAppend((group[0] as BesideCall).key, now)
          ? appendGroup(group, places)
          : countGroup(group, places)
      // Most turns count for one portfolio under one limit: one call, no grouping.
      const first = calls[0] as BesideCall
      if (calls.every((call) => call.key === first.key && call.limit === first.limit)) {
        await countOrAppend(calls, undefined)
        return answers
      }
      const groups = new Map<string, { group: BesideCall[]; places: number[] }>()
      calls.forEach((call, place) => {
        const name = `${call.limit} ${call.key}`
        let entry = groups.get(name)
        if (!entry) {
          entry = { group: [], places: [] }
          groups.set(name, entry)
        }
        entry.group.push(call)
        entry.places.push(place)
      })
      await Promise.all([...groups.values()].map(({ group, places }) => countOrAppend(group, places)))
      return answers
    }
    // Never rejects: Redis failing, the turn's recipients are unread (sent uncounted).
    const countSafely = (calls: BesideCall[], known: boolean) =>
      countTurn(calls, known).catch((error: unknown) =>
        calls.map((): ReachCount => ({ kind: 'unread', error })),
      )
    beside = {
      count: turnBatched((calls: BesideCall[]) => countSafely(calls, false)),
      countKnown: turnBatched((calls: BesideCall[]) => countSafely(calls, true), 'microtask'),
      giveBack,
    }
    besides.set(redis, beside)
  }
  return beside
}

/** Each portfolio's two keys, built once (a message's count would build both), under a prefix. */
const reachKeys = new Map<string, { prefix: string; key: string; recent: string }>()
export function reachKeysOf(prefix: string, portfolio: string) {
  let keys = reachKeys.get(portfolio)
  if (keys?.prefix !== prefix) {
    if (reachKeys.size >= 10_000) reachKeys.clear()
    keys = {
      prefix,
      key: portfolioReachKey(prefix, portfolio),
      recent: portfolioRecentKey(prefix, portfolio),
    }
    reachKeys.set(portfolio, keys)
  }
  return keys
}

/**
 * The messaging limit's count, started beside the claim on one Redis server: undefined when the
 * message does not count, or on a Cluster (the window keys sit on other slots than the reach;
 * `messagingLimitGate` counts there once the gates have passed). A window this process knows open,
 * or the accept path read open (`windowClosesAt`, standing `WINDOW_KNOWN_AT_ACCEPT_MS`), needs no
 * call; one the accept path read closed needs no read: far from the limit it is appended alone.
 * Never rejects.
 */
export function countBesideClaim(
  delivery: MessageDelivery,
  recipient: string,
  recipientHash: string,
): Promise<ReachCount> | undefined {
  const { lane, deps } = delivery
  const limit = lane.settings.messagingLimit
  if (deps.claims.isCluster || !countsAgainstLimit(delivery) || !limit || limit.limit === null)
    return undefined
  const now = Date.now()
  // The window as the accept path read it, while that read stands: open, not counted; closed,
  // counted with no read.
  const closesAt = delivery.data.windowClosesAt
  const known =
    closesAt !== undefined && now - Date.parse(delivery.data.acceptedAt) <= WINDOW_KNOWN_AT_ACCEPT_MS
  if (known && (closesAt as number) > now) return OPEN
  const number = lane.platform.phoneNumberId
  const window = known ? '' : serviceWindowKey(deps.prefix, number, recipient)
  if (!known && knownOpenWindow(window, now)) return OPEN
  const keys = reachKeysOf(deps.prefix, limit.portfolio)
  const beside = besideOf(deps.claims)
  return (known ? beside.countKnown : beside.count)({
    key: keys.key,
    recent: keys.recent,
    limit: limit.limit,
    window,
    member: recipientHash,
    prefix: deps.prefix,
    number,
    recipient,
  })
}

/**
 * A message counted beside its claim that this run does not send (its claim held elsewhere or by a
 * cancel, sent by an earlier run, stopped at a gate): its recipient, if the count added them, is
 * given back (giveBackReach-2.lua: from the exact set or the recent list, only while their time is
 * still the count's: a delivery that reached them since keeps them). Failing, they stay counted:
 * the reach errs high, never low.
 */
export async function giveBackReach(delivery: MessageDelivery, count: Promise<ReachCount> | undefined) {
  const counted = await count
  if (counted?.kind !== 'reached' || !counted.added) return
  const { data, lane, deps, log } = delivery
  const portfolio = lane.settings.messagingLimit?.portfolio as string
  try {
    const keys = reachKeysOf(deps.prefix, portfolio)
    await besideOf(deps.claims).giveBack(
      keys.key,
      keys.recent,
      counted.at,
      deps.hash(recipientOf(data.message.body)),
    )
  } catch (error) {
    log.warn({ err: error, portfolio }, 'messaging limit: a recipient not sent to stays counted')
  }
}
