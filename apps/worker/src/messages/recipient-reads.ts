import type { SuppressionScope } from '@dispatch/contracts'
import {
  SERVICE_WINDOW_MS,
  type SuppressionOwner,
  scopeForOwner,
  serviceWindowKey,
  serviceWindowState,
  serviceWindowsLoadedKey,
  suppressionKey,
  widerScope,
} from '@dispatch/runtime'
import { type RedisClient, turnBatchedGet } from '@dispatch/runtime/redis'
import { knownWindowsMarker, rememberWindowsMarker } from './service-window.ts'

export interface RecipientReads {
  /** An opt-out of this number made since the message was accepted; null when none is known. */
  optOut: Promise<SuppressionScope | null>
  /** The 24-hour window, when the sender's policy is `enforce` and the message is free-form. */
  window: Promise<'open' | 'closed' | 'unknown'> | undefined
}

const NONE: Promise<null> = Promise.resolve(null)

/** Each connection's reads, gathered per turn of the event loop. */
const readers = new WeakMap<RedisClient, (key: string) => Promise<string | null>>()
const readerOf = (redis: RedisClient) => {
  let read = readers.get(redis)
  if (!read) {
    read = turnBatchedGet(redis)
    readers.set(redis, read)
  }
  return read
}

/**
 * What delivery reads about the recipient, beside the claim: the opt-out when one may have come
 * since the message was accepted (consent/watch.ts), and the window when it is checked (with the
 * windows' completeness marker, read at most once a second per process). The reads of every
 * delivery in a turn of the event loop, a bundle's messages and other jobs', go in one MGET (a
 * GET each on a Cluster). Unreadable: no opt-out known, the window unknown.
 */
export function readRecipient(
  redis: RedisClient,
  prefix: string,
  at: { phoneNumberId: string; recipient: string; recipientHash: string; owner: SuppressionOwner },
  reads: {
    optOut: boolean
    window: boolean
    /** Other numbers whose opt-outs stop the message too (a pooled message's pool's), or their read. */
    optOutAlso?: readonly string[] | Promise<readonly string[] | undefined> | undefined
  },
): RecipientReads {
  const { phoneNumberId, recipient, recipientHash, owner } = at
  const read = readerOf(redis)
  // One value holds the recipient's own entry and every owner's: this key's owner's is read in it.
  const optOutOn = (number: string) =>
    read(suppressionKey(prefix, number, recipientHash)).then(
      (value) => scopeForOwner(value, owner),
      () => null,
    )
  const own = reads.optOut ? optOutOn(phoneNumberId) : NONE
  const withOthers = (also: readonly string[] | undefined) =>
    also?.length
      ? Promise.all([own, ...also.map(optOutOn)]).then((scopes) => scopes.reduce(widerScope, null))
      : own
  const also = reads.optOutAlso
  return {
    optOut: also instanceof Promise ? also.then(withOthers, () => own) : withOthers(also),
    window: reads.window ? windowOf(read, prefix, phoneNumberId, recipient) : undefined,
  }
}

/**
 * Windows this process read open, by key, with when they end: a window, once opened by a reply,
 * only ever lasts longer (a later reply extends it), so one known open stays open until then
 * without another read. Closed and unknown are never kept (a reply may open one any moment).
 */
const knownOpen = new Map<string, number>()
const MOST_KNOWN_OPEN = 100_000
const OPEN: Promise<'open'> = Promise.resolve('open')

/** Whether this process read the window `key` open and it still is (no read needed). */
export function knownOpenWindow(key: string, now: number): boolean {
  if (knownOpen.size === 0) return false
  const until = knownOpen.get(key)
  if (until === undefined) return false
  if (until > now) return true
  knownOpen.delete(key)
  return false
}

/** Keeps a window read open (its last inbound message at `last`, ms) until it ends. */
export function rememberOpenWindow(key: string, last: number, now: number): void {
  if (last + SERVICE_WINDOW_MS <= now) return
  if (knownOpen.size >= MOST_KNOWN_OPEN) knownOpen.clear()
  knownOpen.set(key, last + SERVICE_WINDOW_MS)
}

function windowOf(
  read: (key: string) => Promise<string | null>,
  prefix: string,
  phoneNumberId: string,
  recipient: string,
): Promise<'open' | 'closed' | 'unknown'> {
  const now = Date.now()
  const key = serviceWindowKey(prefix, phoneNumberId, recipient)
  if (knownOpenWindow(key, now)) return OPEN
  const lastInbound = read(key).then((last) => {
    if (last !== null) rememberOpenWindow(key, Number(last), now)
    return last
  })
  const known = knownWindowsMarker(prefix, now)
  const loaded =
    known === undefined
      ? read(serviceWindowsLoadedKey(prefix)).then((value) => rememberWindowsMarker(prefix, value, now))
      : known
  return Promise.all([lastInbound, loaded]).then(
    ([last, marker]) => serviceWindowState(last, marker, now),
    () => 'unknown' as const,
  )
}
