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
    const known = markers.get(prefix)
    const [lastInbound, loaded] = await Promise.all([
      redis.get(serviceWindowKey(prefix, phoneNumberId, phone)),
      known && known.until > now ? known.value : redis.get(serviceWindowsLoadedKey(prefix)),
    ])
    if (!known || known.until <= now) markers.set(prefix, { value: loaded, until: now + MARKER_TTL_MS })
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
