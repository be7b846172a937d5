import { SENDER_MAX_RATE, type WhatsAppWebhook } from '@dispatch/contracts'
import { raiseSenderRate, recordSenderHealth } from '@dispatch/db'
import type { FastifyBaseLogger } from 'fastify'
import Type, { type Static } from 'typebox'
import { Compile } from 'typebox/compile'
import type { ApiDeps } from '../../deps.ts'
import { publishSenderChange } from '../../sender-changes.ts'
import type { SkippedStatus } from './whatsapp-statuses.ts'

export const QUALITY_UPDATE_FIELD = 'phone_number_quality_update'

/**
 * The value of a `phone_number_quality_update` change, as Meta documents it: the business number
 * (`display_phone_number`, digits), the `event` (`THROUGHPUT_UPGRADE`, `ONBOARDING`; older
 * deliveries also `UPGRADE`, `DOWNGRADE`, `FLAGGED`, `UNFLAGGED` for messaging-limit tiers) and
 * the limits as tier names (`current_limit`, `old_limit`, `max_daily_conversations_per_business`).
 * Unknown properties are allowed: Meta adds fields over time.
 */
const QualityUpdateValue = Type.Object({
  display_phone_number: Type.String({ minLength: 1, maxLength: 64 }),
  event: Type.String({ minLength: 1, maxLength: 64 }),
  current_limit: Type.Optional(Type.String({ maxLength: 64 })),
  old_limit: Type.Optional(Type.String({ maxLength: 64 })),
  max_daily_conversations_per_business: Type.Optional(Type.String({ maxLength: 64 })),
  /** Not in Meta's documented payload, read when present: names the number without doubt. */
  metadata: Type.Optional(
    Type.Object({ phone_number_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,32}$' })) }),
  ),
})
type QualityUpdateValue = Static<typeof QualityUpdateValue>
const isQualityUpdate = Compile(QualityUpdateValue)

/** Events that say the number's quality (the others are about its limits and throughput). */
const QUALITY_EVENTS = new Set(['FLAGGED', 'UNFLAGGED'])

/** The event by which Meta announces a number's higher throughput (up to 1,000 messages/s). */
const THROUGHPUT_UPGRADE = 'THROUGHPUT_UPGRADE'

export interface QualityUpdate {
  event: string
  /** Digits only. */
  displayPhoneNumber: string
  phoneNumberId: string | undefined
  currentLimit: string | undefined
}

/** The quality updates a delivery carries; a malformed one is skipped and reported by position. */
export function readQualityUpdates(body: WhatsAppWebhook): {
  updates: QualityUpdate[]
  skipped: SkippedStatus[]
} {
  const updates: QualityUpdate[] = []
  const skipped: SkippedStatus[] = []
  body.entry.forEach((entry, e) => {
    entry.changes.forEach((change, c) => {
      if (change.field !== QUALITY_UPDATE_FIELD) return
      const at = `entry[${e}].changes[${c}].value`
      const value: unknown = change.value
      if (!isQualityUpdate.Check(value)) {
        const [problem] = isQualityUpdate.Errors(value)
        skipped.push({ at, reason: `${problem?.instancePath || '/'} ${problem?.message ?? 'is invalid'}` })
        return
      }
      const item = value as QualityUpdateValue
      const digits = item.display_phone_number.replace(/\D/g, '')
      if (digits.length < 6 || digits.length > 20) {
        skipped.push({ at, reason: '/display_phone_number is not a phone number' })
        return
      }
      updates.push({
        event: item.event,
        displayPhoneNumber: digits,
        phoneNumberId: item.metadata?.phone_number_id,
        currentLimit: item.current_limit,
      })
    })
  })
  return { updates, skipped }
}

/**
 * Acts on the updates: a throughput upgrade raises every sender on that number to the Cloud API's
 * ceiling and tells the workers; anything else is logged only. Numbers are logged by their last
 * four digits, senders by id.
 */
export async function applyQualityUpdates(
  deps: Pick<ApiDeps, 'db' | 'redis' | 'config'>,
  log: FastifyBaseLogger,
  updates: QualityUpdate[],
  now: Date,
): Promise<{ raised: number }> {
  let raised = 0
  for (const update of updates) {
    const number = { numberLast4: update.displayPhoneNumber.slice(-4), event: update.event }
    // The number's health: FLAGGED / UNFLAGGED is its quality, `current_limit` its messaging limit.
    const health = {
      ...(QUALITY_EVENTS.has(update.event) ? { qualityRating: update.event } : {}),
      ...(update.currentLimit ? { messagingLimitTier: update.currentLimit } : {}),
    }
    const changed = await recordSenderHealth(
      deps.db,
      { displayPhoneNumber: update.displayPhoneNumber, phoneNumberId: update.phoneNumberId },
      health,
      { source: QUALITY_UPDATE_FIELD, at: now },
    )
    // Announced: every API instance's sender pools take the number out of rotation (or back) at once.
    if (update.event !== THROUGHPUT_UPGRADE) {
      for (const senderId of changed) await publishSenderChange(deps, log, senderId)
    }
    if (update.event !== THROUGHPUT_UPGRADE) {
      log.info({ ...number, currentLimit: update.currentLimit }, 'whatsapp phone number quality update')
      continue
    }
    const result = await raiseSenderRate(
      deps.db,
      { displayPhoneNumber: update.displayPhoneNumber, phoneNumberId: update.phoneNumberId },
      SENDER_MAX_RATE,
      now,
    )
    if (result.matched.length === 0) {
      log.warn(number, 'throughput upgrade for a number no sender has: set its displayPhoneNumber')
      continue
    }
    for (const senderId of result.raised) {
      log.info(
        { ...number, senderId, ratePerSecond: SENDER_MAX_RATE },
        'sender throughput raised by the platform',
      )
      await publishSenderChange(deps, log, senderId)
    }
    raised += result.raised.length
  }
  return { raised }
}
