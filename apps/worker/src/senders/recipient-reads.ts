import {
  type SuppressionScope,
  serviceWindowKey,
  serviceWindowState,
  serviceWindowsLoadedKey,
  suppressionKey,
} from '@dispatch/contracts'
import { type RedisClient, turnBatchedGet } from '@dispatch/contracts/redis'
import { knownWindowsMarker, rememberWindowsMarker } from '../window/check.ts'

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
  at: { phoneNumberId: string; recipient: string; recipientHash: string },
  reads: { optOut: boolean; window: boolean },
): RecipientReads {
  const { phoneNumberId, recipient, recipientHash } = at
  const read = readerOf(redis)
  return {
    optOut: reads.optOut
      ? read(suppressionKey(prefix, phoneNumberId, recipientHash)).then(
          (scope) => scope as SuppressionScope | null,
          () => null,
        )
      : NONE,
    window: reads.window ? windowOf(read, prefix, phoneNumberId, recipient) : undefined,
  }
}

function windowOf(
  read: (key: string) => Promise<string | null>,
  prefix: string,
  phoneNumberId: string,
  recipient: string,
): Promise<'open' | 'closed' | 'unknown'> {
  const now = Date.now()
  const lastInbound = read(serviceWindowKey(prefix, phoneNumberId, recipient))
  const known = knownWindowsMarker(prefix, now)
  // The marker read within the second (the common case): one read, no more promises.
  const loaded =
    known === undefined
      ? read(serviceWindowsLoadedKey(prefix)).then((value) => rememberWindowsMarker(prefix, value, now))
      : known
  const state = (last: string | null, marker: string | null) => serviceWindowState(last, marker, now)
  const answer =
    loaded instanceof Promise
      ? Promise.all([lastInbound, loaded]).then(([last, marker]) => state(last, marker))
      : lastInbound.then((last) => state(last, loaded))
  return answer.catch(() => 'unknown' as const)
}
