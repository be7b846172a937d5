import type { WhatsAppWebhook } from '@dispatch/contracts'
import { type HealthChange, recordSenderHealth } from '@dispatch/db'
import type { FastifyBaseLogger } from 'fastify'
import type { ApiDeps } from '../../deps.ts'
import { publishSenderChange } from '../../sender-changes.ts'
import type { SkippedStatus } from './whatsapp-statuses.ts'

/** An account-level report: what it changes on every sender of that account. */
export interface AccountUpdate {
  wabaId: string
  source: 'account_update' | 'business_capability_update'
  change: HealthChange
  /** Sends through the account will fail in this state: the admins are e-mailed. */
  alert: boolean
}

const word = (value: unknown) =>
  typeof value === 'string' && value.length > 0 && value.length <= 128 ? value : undefined

/** `ban_info.waba_ban_state` as Dispatch records the account. */
const BAN_STATES: Record<string, string> = {
  DISABLE: 'BANNED',
  SCHEDULE_FOR_DISABLE: 'BAN_SCHEDULED',
  REINSTATE: 'ACTIVE',
}
/** Account states in which Meta refuses the business's messages. */
const FAILING = new Set(['BANNED', 'RESTRICTED', 'DELETED'])

/**
 * Reads `account_update` (violations, bans, restrictions, deletion) into the account's status and
 * reason; other account events (verification, partner changes, pricing eligibility) change nothing
 * Dispatch shows, and are answered 200 and dropped. Answers undefined for those.
 */
function accountChange(value: Record<string, unknown>): { change: HealthChange; alert: boolean } | undefined {
  const event = word(value.event)?.toUpperCase()
  const ban = (value.ban_info ?? {}) as Record<string, unknown>
  const violation = word((value.violation_info as Record<string, unknown> | undefined)?.violation_type)
  const restrictions = Array.isArray(value.restriction_info)
    ? value.restriction_info
        .map((r) => word((r as Record<string, unknown>)?.restriction_type))
        .filter(Boolean)
    : []
  const banState = word(ban.waba_ban_state)?.toUpperCase()
  let status: string | undefined
  if (banState && BAN_STATES[banState]) status = BAN_STATES[banState]
  else if (event === 'ACCOUNT_RESTRICTION' || restrictions.length > 0) status = 'RESTRICTED'
  else if (event === 'ACCOUNT_VIOLATION') status = 'VIOLATION'
  else if (event === 'ACCOUNT_DELETED') status = 'DELETED'
  if (!status) return undefined
  const reason = [event, violation, ...restrictions].filter(Boolean).join(': ') || null
  return { change: { accountStatus: status, accountStatusReason: reason }, alert: FAILING.has(status) }
}

/** A number of users as a tier: Meta's own names for its tiers, `TIER_<n>` for another, -1 unlimited. */
function tierOfCount(count: unknown): string | undefined {
  if (count === -1) return 'TIER_UNLIMITED'
  if (typeof count !== 'number' || !Number.isInteger(count) || count <= 0) return undefined
  const named: Record<number, string> = {
    250: 'TIER_250',
    2000: 'TIER_2K',
    10000: 'TIER_10K',
    100000: 'TIER_100K',
  }
  return named[count] ?? `TIER_${count}`
}

/**
 * `business_capability_update`: the portfolio's messaging limit, as a tier name (`TIER_250`,
 * `TIER_2K`, `TIER_10K`, `TIER_100K`, `TIER_UNLIMITED`) or a number of users (-1: unlimited), in
 * `max_daily_conversations_per_business`, else the older per-phone field.
 */
function capabilityChange(value: Record<string, unknown>): HealthChange | undefined {
  const tier =
    word(value.max_daily_conversations_per_business) ??
    tierOfCount(value.max_daily_conversations_per_business) ??
    word(value.messaging_limit_tier)
  if (tier) return { messagingLimitTier: tier.toUpperCase() }
  const perPhone = tierOfCount(value.max_daily_conversation_per_phone)
  if (perPhone) return { messagingLimitTier: perPhone }
  return undefined
}

/** The account reports a delivery carries; a change without an account id is skipped by position. */
export function readAccountUpdates(body: WhatsAppWebhook) {
  const updates: AccountUpdate[] = []
  const skipped: SkippedStatus[] = []
  body.entry.forEach((entry, e) => {
    entry.changes.forEach((change, c) => {
      if (change.field !== 'account_update' && change.field !== 'business_capability_update') return
      if (!entry.id || !/^[0-9]{1,32}$/.test(entry.id)) {
        skipped.push({ at: `entry[${e}].id`, reason: 'is not a WhatsApp Business Account id' })
        return
      }
      const value = change.value as Record<string, unknown>
      if (change.field === 'account_update') {
        const read = accountChange(value)
        if (read) updates.push({ wabaId: entry.id, source: 'account_update', ...read })
        return
      }
      const capability = capabilityChange(value)
      if (capability) {
        updates.push({
          wabaId: entry.id,
          source: 'business_capability_update',
          change: capability,
          alert: false,
        })
      } else {
        skipped.push({ at: `entry[${e}].changes[${c}].value`, reason: 'has no messaging limit' })
      }
    })
  })
  return { updates, skipped }
}

/** Stores each report on the account's senders, with their `sender.updated` events and alerts. */
export async function applyAccountUpdates(
  deps: Pick<ApiDeps, 'db' | 'config' | 'redis'>,
  log: FastifyBaseLogger,
  updates: AccountUpdate[],
  now: Date,
): Promise<void> {
  for (const update of updates) {
    const changed = await recordSenderHealth(deps.db, { wabaId: update.wabaId }, update.change, {
      source: update.source,
      at: now,
      alertTo: update.alert ? deps.config.ADMIN_ALERT_EMAIL : undefined,
    })
    // A new messaging limit is enforced at once: the API's send rules and the workers reload these.
    if (update.change.messagingLimitTier !== undefined) {
      for (const senderId of changed) await publishSenderChange(deps, log, senderId)
    }
    const line = { source: update.source, ...update.change, senders: changed.length }
    if (update.alert) log.error(line, 'sender account reported failing by the platform')
    else log.info(line, 'sender account updated by the platform')
  }
}
