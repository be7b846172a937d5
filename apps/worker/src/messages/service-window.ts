import type { MessageJob, OutboundMessage } from '@dispatch/contracts'

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

/** The message's fallback template as a template message to the same recipient, if it has one. */
export function fallbackMessage(data: MessageJob): OutboundMessage | undefined {
  if (!data.fallbackTemplate || !isFreeForm(data.message)) return undefined
  const { phone, userId } = data.message.body
  const to = phone === undefined ? { userId: userId as string } : { phone }
  return { type: 'template', body: { ...to, ...data.fallbackTemplate } }
}
