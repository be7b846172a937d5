import { contentRetentionOf, DEFAULT_SENDER_ID, type SenderView } from '@dispatch/contracts'
import type { SenderRow } from '@dispatch/db'
import { messagingLimitOf, readReach } from '@dispatch/runtime'
import type { RedisClient } from '@dispatch/runtime/redis'

/** A portfolio's reach as read from Redis: null when it is not counted (or could not be read). */
export type ReachNow = { reach: number; roomAt: number | null } | null

/** The sender's messaging limit as it is shown: the limit, where it comes from, the reach now. */
export function messagingLimitView(row: SenderRow, now: ReachNow): SenderView['messagingLimit'] {
  const limit = messagingLimitOf(row)
  return {
    limit: limit.limit,
    tier: row.messagingLimitTier,
    source: limit.source,
    portfolio: limit.portfolio,
    reach: limit.tracked && now ? now.reach : null,
    roomAt: limit.tracked && now?.roomAt ? new Date(now.roomAt).toISOString() : null,
    policy: limit.policy,
  }
}

/** Each sender's reach, read from Redis (one round trip); a sender not counted is not read. */
export async function readSenderReach(
  redis: RedisClient,
  prefix: string,
  rows: SenderRow[],
  now: number,
): Promise<ReachNow[]> {
  return Promise.all(
    rows.map((row) => {
      const limit = messagingLimitOf(row)
      if (!limit.tracked) return null
      // Unreadable: shown as not known, the view itself still answers.
      return readReach(redis, prefix, limit.portfolio, now).catch(() => null)
    }),
  )
}

/** What admins see: never the token, only its last four characters. */
export const toSenderView = (row: SenderRow, reach: ReachNow = null): SenderView => ({
  id: row.id,
  phoneNumberId: row.phoneNumberId,
  displayName: row.displayName,
  displayPhoneNumber: row.displayPhoneNumber,
  ratePerSecond: row.ratePerSecond,
  state: row.state,
  stateReason: row.stateReason,
  accessTokenLast4: row.accessTokenLast4,
  source: row.id === DEFAULT_SENDER_ID ? 'environment' : 'admin',
  wabaId: row.wabaId,
  serviceWindowPolicy: row.serviceWindowPolicy,
  marketingCap: row.marketingCap ?? null,
  consentKeywords: row.consentKeywords ?? null,
  consentConfirmation: row.consentConfirmation ?? null,
  defaultFallback: row.defaultFallback ?? null,
  inboundContentRetention: contentRetentionOf(row.inboundContentRetentionHours),
  templatesSyncedAt: row.templatesSyncedAt?.toISOString() ?? null,
  businessId: row.businessId,
  messagingLimitPolicy: row.messagingLimitPolicy,
  messagingLimitOverride: row.messagingLimitOverride,
  messagingLimit: messagingLimitView(row, reach),
  health: {
    accountStatus: row.accountStatus,
    accountStatusReason: row.accountStatusReason,
    messagingLimitTier: row.messagingLimitTier,
    qualityRating: row.qualityRating,
    updatedAt: row.healthUpdatedAt?.toISOString() ?? null,
  },
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
})
