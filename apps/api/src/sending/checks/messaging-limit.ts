import { recipientField, recipientOf } from '@dispatch/contracts'
import {
  MESSAGING_LIMIT_WINDOW_MS,
  portfolioReachKey,
  type RecipientHasher,
  serviceWindowKey,
  serviceWindowState,
  serviceWindowsLoadedKey,
} from '@dispatch/runtime'
import type { RedisClient } from '@dispatch/runtime/redis'
import { AppError } from '../../errors.ts'
import type { Log } from '../log.ts'
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
  prefix: string
  hash: RecipientHasher
  log: Log
}

const limitReached = (send: Send, limit: number, roomAt: number | null) =>
  new AppError(
    'MESSAGING_LIMIT_REACHED',
    `${recipientField(send.body, send.field)}: ${recipientOf(send.body)} is outside their 24-hour window and this ` +
      `sender's business portfolio has reached its messaging limit (${limit} users in a moving 24 hours)` +
      (roomAt ? `; room frees at ${new Date(roomAt).toISOString()}` : ''),
  )

/**
 * Under `messagingLimitPolicy: refuse`, a template to a recipient outside their window (closed or
 * unknown) whom the portfolio has not reached in the last 24 h is refused once the reach is at the
 * limit (422 MESSAGING_LIMIT_REACHED). Only reads: the count itself is taken at delivery, so a send
 * that fails elsewhere, or is canceled, takes no room. The windows go in the turn's MGET; the reach
 * (a ZSCORE per recipient, a ZCOUNT and the oldest member) in one pipeline sent in the same turn, so
 * the request waits no round trip more. In a batch, the new recipients take what room is left in
 * order. Unreadable: let through (delivery counts and holds).
 */
export async function checkMessagingLimit(
  deps: LimitCheckDeps,
  rules: SenderRules | undefined,
  sends: Send[],
  errors: Array<AppError | undefined>,
  now: number,
): Promise<void> {
  const limit = rules?.messagingLimit
  if (!(rules && limit?.tracked && limit.policy === 'refuse' && limit.limit !== null)) return
  const counted = sends.flatMap((send, i) => (send.type === 'template' && !errors[i] ? [i] : []))
  if (counted.length === 0) return
  const key = portfolioReachKey(deps.prefix, limit.portfolio)
  const cutoff = now - MESSAGING_LIMIT_WINDOW_MS
  const recipients = counted.map((i) => recipientOf((sends[i] as Send).body))
  const pipeline = deps.redis.pipeline()
  for (const recipient of recipients) pipeline.zscore(key, deps.hash(recipient))
  pipeline.zcount(key, `(${cutoff}`, '+inf')
  pipeline.zrangebyscore(key, `(${cutoff}`, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  let windows: Array<string | null>
  let marker: string | null
  let replies: Array<[Error | null, unknown]>
  try {
    ;[windows, marker, replies] = await Promise.all([
      Promise.all(recipients.map((r) => deps.read(serviceWindowKey(deps.prefix, rules.phoneNumberId, r)))),
      deps.read(serviceWindowsLoadedKey(deps.prefix)),
      pipeline.exec().then((answers) => {
        if (!answers || answers.some(([error]) => error)) throw new Error('reach not read')
        return answers
      }),
    ])
  } catch (error) {
    deps.log.warn({ err: error }, 'messaging limit not checked; delivery counts and holds')
    return
  }
  let reach = Number(replies[recipients.length]?.[1] ?? 0)
  const oldest = replies[recipients.length + 1]?.[1] as string[] | undefined
  const roomAt = oldest?.[1] === undefined ? null : Number(oldest[1]) + MESSAGING_LIMIT_WINDOW_MS
  const seen = new Set<string>()
  counted.forEach((i, n) => {
    if (serviceWindowState(windows[n] ?? null, marker, now) === 'open') return
    const score = replies[n]?.[1]
    if (score !== null && score !== undefined && Number(score) > cutoff) return
    const recipient = recipients[n] as string
    if (seen.has(recipient)) return
    if (reach < (limit.limit as number)) {
      seen.add(recipient)
      reach += 1
      return
    }
    errors[i] = limitReached(sends[i] as Send, limit.limit as number, roomAt)
  })
}
