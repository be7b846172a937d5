import { portfolioOf, type SenderPoolMemberView, type SenderPoolView } from '@dispatch/contracts'
import type { SenderPoolDetail } from '@dispatch/db'
import { exclusionOf } from '../sending/pools/health.ts'

/** The row's health only: a 130429 pause is Redis's, not shown here, so no tolerance applies. */
const ROW_RULES = { rateLimitToleranceMs: Number.POSITIVE_INFINITY }

/** A pool as admins see it: its members in order, each with its health and whether it takes new recipients. */
export function toSenderPoolView(detail: SenderPoolDetail, now: number): SenderPoolView {
  const members = detail.members.map(({ position, weight, sender }): SenderPoolMemberView => {
    const excluded = exclusionOf(sender, ROW_RULES, now)
    return {
      senderId: sender.id,
      position,
      weight,
      displayName: sender.displayName,
      displayPhoneNumber: sender.displayPhoneNumber,
      wabaId: sender.wabaId,
      portfolio: portfolioOf(sender),
      state: sender.state,
      health: {
        accountStatus: sender.accountStatus,
        accountStatusReason: sender.accountStatusReason,
        messagingLimitTier: sender.messagingLimitTier,
        qualityRating: sender.qualityRating,
        updatedAt: sender.healthUpdatedAt?.toISOString() ?? null,
      },
      inRotation: excluded === null,
      outOfRotation: excluded,
    }
  })
  return {
    id: detail.pool.id,
    name: detail.pool.name,
    portfolio: members[0]?.portfolio ?? '',
    members,
    boundKeys: detail.boundKeys,
    createdAt: detail.pool.createdAt.toISOString(),
    updatedAt: detail.pool.updatedAt.toISOString(),
  }
}
