import {
  type SuppressionScope,
  serviceWindowKey,
  serviceWindowState,
  serviceWindowsLoadedKey,
  suppressionKey,
} from '@dispatch/contracts'
import type { RedisClient } from '@dispatch/contracts/redis'
import { optOutAtDelivery } from '../consent/check.ts'
import { knownWindowsMarker, rememberWindowsMarker, windowAtDelivery } from '../window/check.ts'

export interface RecipientReads {
  /** An opt-out of this number made since the message was accepted; null when none is known. */
  optOut: Promise<SuppressionScope | null>
  /** The 24-hour window, when the sender's policy is `enforce` and the message is free-form. */
  window: Promise<'open' | 'closed' | 'unknown'> | undefined
}

const NONE: Promise<null> = Promise.resolve(null)

/**
 * What delivery reads about the recipient, beside the claim: the opt-out when one may have come
 * since the message was accepted (consent/watch.ts), and the window when it is checked. Off a
 * Cluster both (and the windows' completeness marker, when due) are one MGET: one command and one
 * reply for what would be two or three; on a Cluster, a GET each (their keys sit on different
 * slots). Unreadable: no opt-out known, the window unknown, as each read alone answers.
 */
export function readRecipient(
  redis: RedisClient,
  prefix: string,
  at: { phoneNumberId: string; recipient: string; recipientHash: string },
  reads: { optOut: boolean; window: boolean },
): RecipientReads {
  const { phoneNumberId, recipient, recipientHash } = at
  if (!reads.optOut || !reads.window || redis.isCluster) {
    return {
      optOut: reads.optOut ? optOutAtDelivery(redis, prefix, phoneNumberId, recipientHash) : NONE,
      window: reads.window ? windowAtDelivery(redis, prefix, phoneNumberId, recipient) : undefined,
    }
  }
  const now = Date.now()
  const marker = knownWindowsMarker(prefix, now)
  const keys = [
    suppressionKey(prefix, phoneNumberId, recipientHash),
    serviceWindowKey(prefix, phoneNumberId, recipient),
  ]
  if (marker === undefined) keys.push(serviceWindowsLoadedKey(prefix))
  const values = redis.mget(keys).catch(() => undefined)
  return {
    optOut: values.then((read) => (read?.[0] ?? null) as SuppressionScope | null),
    window: values.then((read) => {
      if (!read) return 'unknown'
      const loaded = marker === undefined ? rememberWindowsMarker(prefix, read[2] ?? null, now) : marker
      return serviceWindowState(read[1] ?? null, loaded, now)
    }),
  }
}
