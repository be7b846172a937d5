/**
 * Who a message belongs to once it is due: the first worker to take it, or its sender's cancel.
 * One Redis key per message, set once (`NX`) by whichever comes first, so a cancel and a worker
 * racing for the same message end with exactly one winner: `worker` (the message goes out; the
 * cancel is refused) or `cancel` (no platform call is ever made).
 */
export const messageClaimKey = (prefix: string, messageId: string) => `${prefix}:messages:claim:${messageId}`

export type MessageClaim = 'worker' | 'cancel'

/**
 * How long a claim is kept: past the moment the message can no longer be taken (its expiry), and
 * by then its record in Postgres tells the rest. Messages without an expiry get a day.
 */
export function messageClaimTtlMs(expiresAt: string | undefined, now: number): number {
  const left = expiresAt ? Date.parse(expiresAt) - now : 0
  return Math.max(0, left) + 24 * 3600 * 1000
}
