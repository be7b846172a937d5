import { DEFAULT_SENDER_ID, recipientOf } from '@dispatch/contracts'
import { SERVICE_WINDOW_MS, type StickyRecord } from '@dispatch/runtime'
import type { AppError } from '../../errors.ts'
import { type AcceptedMessage, normalSenderId, type SendingKey, senderNotAllowed } from '../accept.ts'
import type { Log } from '../log.ts'
import { chooseSender, spreadByWeight } from './choose.ts'
import type { SenderPoolCache } from './pool-cache.ts'
import type { StickyStore } from './sticky.ts'

/** What the choice needs of sending: the pools in memory and the sticky records in Redis. */
export interface PoolSending {
  pools: SenderPoolCache
  sticky: StickyStore
  log: Log
}

/** A single send's sticky read, started with the request's other reads (`prefetchSticky`). */
export interface PrefetchedSticky {
  poolId: string
  recipient: string
  /** The number the spread gives the recipient (most sends' choice), for the checks' early reads. */
  likely: string
  /** The record, undefined when there is none, null when the read failed. */
  read: Promise<StickyRecord | undefined | null>
}

/** Starts the sticky read of a pooled key's single send, so it overlaps the rate limit's round trip. */
export function prefetchSticky(
  sending: PoolSending,
  key: SendingKey,
  body: unknown,
): PrefetchedSticky | undefined {
  const poolId = key.senderPoolId
  const pool = poolId ? sending.pools.get(poolId) : undefined
  if (!pool) return undefined
  const send = body as { phone?: string; userId?: string; senderId?: string } | undefined
  if (!send || send.senderId !== undefined) return undefined
  const recipient = recipientOf(send)
  if (typeof recipient !== 'string') return undefined
  return {
    poolId: pool.id,
    recipient,
    likely: spreadByWeight(pool.members, recipient) ?? key.senderId ?? DEFAULT_SENDER_ID,
    read: sending.sticky.prefetch(pool.id, recipient),
  }
}

/**
 * Chooses the number of each accepted send of a pooled key (docs/sender-pools.md, "Sending
 * through a pool"), before the checks, which then use the chosen number's rules (its WABA's
 * templates, its window): a send's own `senderId` when it is a member (else `422
 * INVALID_REFERENCE`), else the number the recipient sticks to while it may, else the spread by
 * weight over the healthy members. Each job is set to go through the chosen sender and carries the
 * pool; a send whose recipient changes number carries the new sticky record, written once it is
 * stored, and so does one whose record is POOL_STICKY_TTL_DAYS old (`stickyAging`); any other send
 * writes nothing. A pool this process has not loaded sends through the key's own sender; a sticky
 * record Redis could not read is none.
 */
export async function choosePoolSenders(
  sending: PoolSending,
  key: SendingKey,
  judged: Array<{ accepted: AcceptedMessage } | { error: AppError }>,
  items: ReadonlyArray<{ body: unknown; field: string }>,
  open: number[],
  now: number,
  prefetched?: PrefetchedSticky,
): Promise<void> {
  const poolId = key.senderPoolId
  if (!poolId) return
  const pool = sending.pools.get(poolId)
  const home = key.senderId ?? DEFAULT_SENDER_ID
  const accepted = (i: number) => (judged[i] as { accepted: AcceptedMessage }).accepted
  const bodyOf = (i: number) =>
    (items[i] as { body: unknown }).body as { phone?: string; userId?: string; senderId?: string }
  // Each send's sticky read: the prefetched one (a single send's), else one more in the turn's MGET.
  const readOf = (i: number): Promise<StickyRecord | null | undefined> | undefined => {
    const body = bodyOf(i)
    if (!pool || body.senderId !== undefined) return undefined
    const recipient = recipientOf(body) as string
    if (prefetched && prefetched.poolId === poolId && prefetched.recipient === recipient)
      return prefetched.read
    return sending.sticky.read(poolId, recipient, now).catch((error) => {
      sending.log.warn({ err: error, senderPoolId: poolId }, 'sticky sender not read; choosing afresh')
      return undefined
    })
  }
  // A lone send awaits its read alone: no Promise.all on the hot path.
  const records: Array<StickyRecord | null | undefined> =
    open.length === 1 ? [await readOf(open[0] as number)] : await Promise.all(open.map(readOf))
  open.forEach((i, n) => {
    const message = accepted(i)
    const { job } = message
    const body = bodyOf(i)
    const field = (items[i] as { field: string }).field
    const requested = body.senderId === undefined ? undefined : normalSenderId(body.senderId)
    if (!pool) {
      if (requested !== undefined && requested !== home) {
        judged[i] = { error: senderNotAllowed(field, requested) }
      }
      return
    }
    const recipient = recipientOf(body) as string
    const record = records[n] ?? undefined
    const choice = chooseSender({
      members: pool.members,
      recipient,
      sticky: record && {
        senderId: record.senderId,
        windowOpen: record.inboundAt + SERVICE_WINDOW_MS > now,
      },
      requested,
      home,
    })
    if (choice.senderId === null) {
      judged[i] = { error: senderNotAllowed(field, requested as string) }
      return
    }
    job.senderId = choice.senderId
    job.senderPoolId = poolId
    if (record?.senderId !== choice.senderId) {
      message.sticky = { poolId, recipient, senderId: choice.senderId, inboundAt: 0, writtenAt: now }
    } else if (sending.sticky.aging(record, now)) {
      // Kept, but POOL_STICKY_TTL_DAYS old: written again, their window with it kept.
      message.sticky = {
        poolId,
        recipient,
        senderId: choice.senderId,
        inboundAt: record.inboundAt,
        writtenAt: now,
      }
    }
  })
}
