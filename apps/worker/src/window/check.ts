import {
  type MessageJob,
  type OutboundMessage,
  serviceWindowKey,
  serviceWindowState,
  serviceWindowsLoadedKey,
} from '@dispatch/contracts'
import type { RedisClient } from '@dispatch/contracts/redis'

/** The code a message fails with when its window is closed and it has no fallback: Meta's own. */
export const WINDOW_CLOSED_CODE = '131047'

/** Anything but a template needs the recipient's 24-hour window open. */
export const isFreeForm = (message: OutboundMessage) => message.type !== 'template'

/** How long a read of the windows' completeness marker stands (it changes only when Redis loses its data). */
const MARKER_TTL_MS = 1000
const markers = new Map<string, { value: string | null; until: number }>()

/** The completeness marker as last read in this process, while that read stands; else undefined. */
export function knownWindowsMarker(prefix: string, now: number): string | null | undefined {
  const known = markers.get(prefix)
  return known && known.until > now ? known.value : undefined
}

/** Keeps a fresh read of the completeness marker for MARKER_TTL_MS. */
export function rememberWindowsMarker(prefix: string, value: string | null, now: number): string | null {
  markers.set(prefix, { value, until: now + MARKER_TTL_MS })
  return value
}

/**
 * The recipient's window as the Redis copy has it: one read per message, the completeness marker
 * read at most once a second per process. Unreadable counts as unknown.
 */
export async function windowAtDelivery(
  redis: RedisClient,
  prefix: string,
  phoneNumberId: string,
  phone: string,
  now = Date.now(),
): Promise<'open' | 'closed' | 'unknown'> {
  try {
    const known = knownWindowsMarker(prefix, now)
    const [lastInbound, loaded] = await Promise.all([
      redis.get(serviceWindowKey(prefix, phoneNumberId, phone)),
      known === undefined
        ? redis
            .get(serviceWindowsLoadedKey(prefix))
            .then((value) => rememberWindowsMarker(prefix, value, now))
        : known,
    ])
    return serviceWindowState(lastInbound ?? null, loaded ?? null, now)
  } catch {
    return 'unknown'
  }
}

/** The message's fallback template as a template message to the same recipient, if it has one. */
export function fallbackMessage(data: MessageJob): OutboundMessage | undefined {
  if (!data.fallbackTemplate || !isFreeForm(data.message)) return undefined
  const { phone, userId } = data.message.body
  const to = phone === undefined ? { userId: userId as string } : { phone }
  return { type: 'template', body: { ...to, ...data.fallbackTemplate } }
}
