import { recipientField, recipientOf } from '@dispatch/contracts'
import {
  MESSAGING_LIMIT_WINDOW_MS,
  PEEK_REACH_SCRIPT,
  portfolioReachKey,
  portfolioRecentKey,
  type RecipientHasher,
  SERVICE_WINDOW_MS,
  serviceWindowKey,
  serviceWindowState,
} from '@dispatch/runtime'
import { scriptCall } from '@dispatch/runtime/lua-scripts'
import { type RedisClient, turnBatched } from '@dispatch/runtime/redis'
import { AppError } from '../../errors.ts'
import type { Log } from '../log.ts'
import type { KnownReaches } from './known-reach.ts'
import type { SenderRules } from './send-rules.ts'

/** One send as this check reads it (send-checks.ts' `SendToCheck`). */
interface Send {
  type: string
  body: { phone?: string | undefined; userId?: string | undefined }
  field: string
}

export interface LimitCheckDeps {
  redis: RedisClient
  /** The turn's batched GET (one MGET for every request of a turn). */
  read: (key: string) => Promise<string | null>
  /** The windows' completeness marker, read at most once a second (send-checks.ts). */
  marker: (now: number) => Promise<string | null>
  prefix: string
  hash: RecipientHasher
  log: Log
  /** Each portfolio's reach as last read, for a second (known-reach.ts). */
  reaches: KnownReaches
}

const limitReached = (send: Send, limit: number, roomAt: number | null) =>
  new AppError(
    'MESSAGING_LIMIT_REACHED',
    `${recipientField(send.body, send.field)}: ${recipientOf(send.body)} is outside their 24-hour window and this ` +
      `sender's business portfolio has reached its messaging limit (${limit} users in a moving 24 hours)` +
      (roomAt ? `; room frees at ${new Date(roomAt).toISOString()}` : ''),
  )

/** One read of the reach: a portfolio's keys (its set, its recent list) and the recipients of one request. */
type Peek = { key: string; recent: string; cutoff: number; limit: number; members: string[] }
/** The reach, its oldest time, and per recipient when it was counted (ms; 0: not in the reach). */
type Peeked = { reach: number; oldest: number; countedAt: number[] }

/**
 * Each connection's reads of the reach, gathered per turn of the event loop: the requests of a turn
 * to one portfolio read it in one script call (peekReach-2.lua), as the marketing cap's counts are.
 */
const peekers = new WeakMap<RedisClient, (peek: Peek) => Promise<Peeked>>()
function peekerOf(redis: RedisClient) {
  let peek = peekers.get(redis)
  if (!peek) {
    const script = scriptCall(redis, PEEK_REACH_SCRIPT)
    peek = turnBatched(async (peeks: Peek[]) => {
      const answers = new Map<Peek, Peeked>()
      const groups = Map.groupBy(peeks, (p) => `${p.cutoff} ${p.limit} ${p.key}`)
      await Promise.all(
        [...groups.values()].map(async (group) => {
          const first = group[0] as Peek
          const replies = (await script(
            first.key,
            first.recent,
            first.cutoff,
            MESSAGING_LIMIT_WINDOW_MS,
            first.limit,
            ...group.flatMap((p) => p.members),
          )) as number[]
          const [reach = 0, oldest = 0] = replies
          let at = 2
          for (const p of group) {
            answers.set(p, {
              reach,
              oldest,
              countedAt: p.members.map((_, i) => Number(replies[at + i] ?? 0)),
            })
            at += p.members.length
          }
        }),
      )
      return peeks.map((p) => answers.get(p) as Peeked)
    })
    peekers.set(redis, peek)
  }
  return peek
}

/** What the limit reads of a request's recipients: their windows, the marker, the reach. */
type LimitReads = { windows: Array<string | null>; marker: string | null; peeked: Peeked }

/** A single send's reads, started early (`SendChecks.prefetch`): undefined when they failed. */
export type PrefetchedLimit = { recipient: string; reads: Promise<LimitReads | undefined> }

/** Under a finite limit and `refuse`: the sender's limit; else undefined (nothing to read). */
function refusing(rules: SenderRules | undefined) {
  const limit = rules?.messagingLimit
  return rules && limit?.tracked && limit.policy === 'refuse' && limit.limit !== null
    ? { rules, limit, max: limit.limit }
    : undefined
}

function readLimit(
  deps: LimitCheckDeps,
  rules: SenderRules,
  portfolio: string,
  recipients: string[],
  now: number,
): Promise<LimitReads> {
  // Whole seconds: the requests of a turn share one cutoff, so one call.
  const cutoff = Math.floor(now / 1000) * 1000 - MESSAGING_LIMIT_WINDOW_MS
  return Promise.all([
    Promise.all(recipients.map((r) => deps.read(serviceWindowKey(deps.prefix, rules.phoneNumberId, r)))),
    deps.marker(now),
    peekerOf(deps.redis)({
      key: portfolioReachKey(deps.prefix, portfolio),
      recent: portfolioRecentKey(deps.prefix, portfolio),
      cutoff,
      limit: rules.messagingLimit?.limit ?? 0,
      members: recipients.map((r) => deps.hash(r)),
    }),
  ]).then(([windows, marker, peeked]) => ({ windows, marker, peeked }))
}

/**
 * A single template send's limit reads, started before the request's other steps (as its
 * suppression entry is), so their round trip overlaps those instead of following them.
 */
export function prefetchLimit(
  deps: LimitCheckDeps,
  rules: SenderRules | undefined,
  type: string,
  recipient: string,
  now: number,
): PrefetchedLimit | undefined {
  const on = refusing(rules)
  if (!on || type !== 'template') return undefined
  // The recipient takes no room, or room is known (the reach read less than a second ago, far from
  // the limit): nothing to read.
  const { portfolio } = on.limit
  const free = deps.reaches.free(portfolio, on.rules.phoneNumberId, recipient, now)
  if (free || deps.reaches.fits(portfolio, on.max, now)) return undefined
  const reads = readLimit(deps, on.rules, on.limit.portfolio, [recipient], now).catch(() => undefined)
  return { recipient, reads }
}

/**
 * Under `messagingLimitPolicy: refuse`, a template to a recipient outside their window (closed or
 * unknown) whom the portfolio has not reached in the last 24 h is refused once the reach is at the
 * limit (422 MESSAGING_LIMIT_REACHED). Only reads: the count itself is taken at delivery, so a send
 * that fails elsewhere, or is canceled, takes no room. The windows go in the turn's MGET, the reach
 * in one script call per portfolio for every request of the turn (peekReach-2.lua), a single send's
 * started early with its other reads: the request waits no round trip more. In a batch, the new
 * recipients take what room is left in order. Unreadable: let through (delivery counts and holds).
 * Far from the limit nothing is read: the reach read less than a second ago, with every recipient
 * let through since taken as new, leaves room for the request's (`KnownReaches`).
 */
export function checkMessagingLimit(
  deps: LimitCheckDeps,
  rules: SenderRules | undefined,
  sends: Send[],
  errors: Array<AppError | undefined>,
  now: number,
  prefetched?: PrefetchedLimit,
): Promise<void> | undefined {
  const on = refusing(rules)
  if (!on) return undefined
  // The templates' recipients who may take room: not known open, counted or let through already.
  const { portfolio } = on.limit
  let counted: number[] | undefined
  let recipients: string[] | undefined
  for (const [i, send] of sends.entries()) {
    if (send.type !== 'template' || errors[i]) continue
    const recipient = recipientOf(send.body)
    if (deps.reaches.free(portfolio, on.rules.phoneNumberId, recipient, now)) continue
    counted ??= []
    recipients ??= []
    counted.push(i)
    recipients.push(recipient)
  }
  if (counted === undefined || recipients === undefined) return undefined
  // Room for all of them, each taken as new, by the reach read less than a second ago: no read,
  // and no promise (the request's other checks are not waited for one more turn).
  if (deps.reaches.take(portfolio, on.max, recipients, now)) return undefined
  return judgeByReads(deps, on, sends, counted, recipients, errors, now, prefetched)
}

/** The limit judged on fresh reads of the request's windows and the portfolio's reach. */
async function judgeByReads(
  deps: LimitCheckDeps,
  on: NonNullable<ReturnType<typeof refusing>>,
  sends: Send[],
  counted: number[],
  recipients: string[],
  errors: Array<AppError | undefined>,
  now: number,
  prefetched: PrefetchedLimit | undefined,
): Promise<void> {
  const { limit, max } = on
  const { portfolio } = limit
  const early = recipients.length === 1 && prefetched?.recipient === recipients[0] ? prefetched : undefined
  let read: LimitReads | undefined
  try {
    read = early ? await early.reads : await readLimit(deps, on.rules, portfolio, recipients, now)
    if (!read) throw new Error('the prefetched limit reads failed')
  } catch (error) {
    deps.log.warn({ err: error }, 'messaging limit not checked; delivery counts and holds')
    return
  }
  const { windows, marker, peeked } = read
  let reach = peeked.reach
  const roomAt = peeked.oldest ? peeked.oldest + MESSAGING_LIMIT_WINDOW_MS : null
  const seen = new Set<string>()
  counted.forEach((i, n) => {
    const recipient = recipients[n] as string
    const window = windows[n] ?? null
    if (serviceWindowState(window, marker, now) === 'open') {
      deps.reaches.openUntil(on.rules.phoneNumberId, recipient, Number(window) + SERVICE_WINDOW_MS)
      return
    }
    const countedAt = peeked.countedAt[n] ?? 0
    if (countedAt > 0) {
      deps.reaches.countedUntil(portfolio, recipient, countedAt + MESSAGING_LIMIT_WINDOW_MS)
      return
    }
    if (seen.has(recipient)) return
    if (reach < max) {
      seen.add(recipient)
      reach += 1
      return
    }
    errors[i] = limitReached(sends[i] as Send, max, roomAt)
  })
  deps.reaches.remember(portfolio, peeked.reach, seen, now)
}
