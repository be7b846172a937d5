import { DEFAULT_SENDER_ID, recipientOf } from '@dispatch/contracts'
import { SERVICE_WINDOW_MS, type StickyRecord } from '@dispatch/runtime'
import type { AppError } from '../../errors.ts'
import { type AcceptedMessage, normalSenderId, type SendingKey, senderNotAllowed } from '../accept.ts'
import type { Log } from '../log.ts'
import { type ChoiceInput, chooseSender, spreadByWeight } from './choose.ts'
import type { SenderPoolCache } from './pool-cache.ts'
import { StickyRead, type StickyStore } from './sticky.ts'

/** What the choice needs of sending: the pools in memory and the sticky records in Redis. */
export interface PoolSending {
  pools: SenderPoolCache
  sticky: StickyStore
  log: Log
}

/** Starts the sticky read of a pooled key's single send, so it overlaps the rate limit's round trip. */
export function prefetchSticky(sending: PoolSending, key: SendingKey, body: unknown): StickyRead | undefined {
  const poolId = key.senderPoolId
  const pool = poolId ? sending.pools.get(poolId) : undefined
  if (!pool) return undefined
  const send = body as SendBody | undefined
  if (!send || send.senderId !== undefined) return undefined
  const recipient = recipientOf(send)
  if (typeof recipient !== 'string') return undefined
  const read = new StickyRead(
    pool.id,
    recipient,
    spreadByWeight(pool.members, recipient) ?? key.senderId ?? DEFAULT_SENDER_ID,
  )
  sending.sticky.prefetch(read)
  return read
}

/**
 * The early read of a pooled key's single send when it is this request's send (its pool, its
 * recipient, no `senderId` of its own, the pool loaded): `judge` checks the send against the
 * spread's number while the record lands (judge.ts).
 */
export function earlySticky(
  sending: PoolSending,
  key: SendingKey,
  items: ReadonlyArray<{ body: unknown }>,
  open: number[],
  prefetched: StickyRead | undefined,
): StickyRead | undefined {
  if (!prefetched || open.length !== 1 || prefetched.poolId !== key.senderPoolId) return undefined
  const body = (items[open[0] as number] as { body: unknown }).body as SendBody
  if (body.senderId !== undefined || recipientOf(body) !== prefetched.recipient) return undefined
  return sending.pools.get(prefetched.poolId) ? prefetched : undefined
}

/**
 * Whether the early read's send keeps the spread's number it was checked against (`judge`), by its
 * recipient's record: if so, `message` (absent when the checks refused it) is set to go through it,
 * as `choosePoolSenders` would set it. If not, nothing is set: the send is chosen and checked again.
 */
export function keepsLikely(
  sending: PoolSending,
  key: SendingKey,
  early: StickyRead,
  record: StickyRecord | undefined,
  message: AcceptedMessage | undefined,
  now: number,
): boolean {
  const pool = sending.pools.get(early.poolId)
  const home = key.senderId ?? DEFAULT_SENDER_ID
  // A pool gone since the read: the send goes through the key's own sender.
  if (!pool) return home === early.likely
  const chosen = choiceFor(pool.members, early.recipient, record, undefined, home, now).senderId
  if (chosen !== early.likely) return false
  if (message) setChoice(sending, message, early.poolId, early.recipient, record, chosen, now)
  return true
}

/** `chooseSender` for a recipient by their record: sticky while it may be, its window open or not. */
const choiceFor = (
  members: ChoiceInput['members'],
  recipient: string,
  record: StickyRecord | undefined,
  requested: string | undefined,
  home: string,
  now: number,
) =>
  chooseSender({
    members,
    recipient,
    sticky: record && { senderId: record.senderId, windowOpen: record.inboundAt + SERVICE_WINDOW_MS > now },
    requested,
    home,
  })

/** Each open send's sticky record (undefined: none, or not read), in the order of `open`. */
export type StickyRecords = Array<StickyRecord | null | undefined>

/**
 * The sticky records a pooled key's sends are chosen by (`choosePoolSenders`): the prefetched read
 * of a single send, else one more key in the turn's MGET each; none (an empty list, no promise)
 * when the key has no pool this process knows, and none for a send that names its number. A lone
 * send's read is awaited alone (no Promise.all on the hot path). A record Redis could not read is
 * none.
 */
export function readStickyRecords(
  sending: PoolSending,
  key: SendingKey,
  items: ReadonlyArray<{ body: unknown }>,
  open: number[],
  now: number,
  prefetched?: StickyRead,
): Promise<StickyRecords> | StickyRecords {
  const poolId = key.senderPoolId
  if (!poolId || !sending.pools.get(poolId)) return []
  const readOf = (i: number): Promise<StickyRecord | null | undefined> | undefined => {
    const body = (items[i] as { body: unknown }).body as SendBody
    if (body.senderId !== undefined) return undefined
    const recipient = recipientOf(body) as string
    if (prefetched && prefetched.poolId === poolId && prefetched.recipient === recipient)
      return prefetched.wait()
    return sending.sticky.read(poolId, recipient, now).catch((error) => {
      sending.log.warn({ err: error, senderPoolId: poolId }, 'sticky sender not read; choosing afresh')
      return undefined
    })
  }
  if (open.length === 1) {
    const read = readOf(open[0] as number)
    return read ? read.then(one) : [undefined]
  }
  return Promise.all(open.map(readOf))
}

const one = (record: StickyRecord | null | undefined): StickyRecords => [record]

type SendBody = { phone?: string; userId?: string; senderId?: string }

/**
 * Chooses the number of each accepted send of a pooled key (docs/sender-pools.md, "Sending
 * through a pool"), before the checks, which then use the chosen number's rules (its WABA's
 * templates, its window): a send's own `senderId` when it is a member (else `422
 * INVALID_REFERENCE`), else the number the recipient sticks to while it may (`records`, read by
 * `readStickyRecords`), else the spread by weight over the healthy members. Each job is set to go
 * through the chosen sender and carries the pool; a send whose recipient changes number carries
 * the new sticky record, written once it is stored, and so does one whose record is
 * POOL_STICKY_TTL_DAYS old (`stickyAging`); any other send writes nothing. A pool this process has
 * not loaded sends through the key's own sender.
 */
export function choosePoolSenders(
  sending: PoolSending,
  key: SendingKey,
  judged: Array<{ accepted: AcceptedMessage } | { error: AppError }>,
  items: ReadonlyArray<{ body: unknown; field: string }>,
  open: number[],
  now: number,
  records: StickyRecords,
): void {
  const poolId = key.senderPoolId
  if (!poolId) return
  const pool = sending.pools.get(poolId)
  const home = key.senderId ?? DEFAULT_SENDER_ID
  for (let n = 0; n < open.length; n++) {
    const i = open[n] as number
    const message = (judged[i] as { accepted: AcceptedMessage }).accepted
    const item = items[i] as { body: unknown; field: string }
    const body = item.body as SendBody
    const requested = body.senderId === undefined ? undefined : normalSenderId(body.senderId)
    if (!pool) {
      if (requested !== undefined && requested !== home) {
        judged[i] = { error: senderNotAllowed(item.field, requested) }
      }
      continue
    }
    const recipient = recipientOf(body) as string
    const record = records[n] ?? undefined
    const choice = choiceFor(pool.members, recipient, record, requested, home, now)
    if (choice.senderId === null) {
      judged[i] = { error: senderNotAllowed(item.field, requested as string) }
      continue
    }
    setChoice(sending, message, poolId, recipient, record, choice.senderId, now)
  }
}

/** Sets a pooled send to go through `senderId`, with the record to write if it is a change or aging. */
function setChoice(
  sending: PoolSending,
  message: AcceptedMessage,
  poolId: string,
  recipient: string,
  record: StickyRecord | undefined,
  senderId: string,
  now: number,
): void {
  message.job.senderId = senderId
  message.job.senderPoolId = poolId
  if (record?.senderId !== senderId) {
    message.sticky = { poolId, recipient, senderId, inboundAt: 0, writtenAt: now }
  } else if (sending.sticky.aging(record, now)) {
    // Kept, but POOL_STICKY_TTL_DAYS old: written again, their window with it kept.
    message.sticky = { poolId, recipient, senderId, inboundAt: record.inboundAt, writtenAt: now }
  }
}
