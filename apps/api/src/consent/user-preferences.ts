import { DEFAULT_SENDER_ID, isUserId, type WhatsAppWebhook } from '@dispatch/contracts'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import Type from 'typebox'
import { Compile } from 'typebox/compile'
import { optIn, optOut } from './suppression-list.ts'

export const USER_PREFERENCES_FIELD = 'user_preferences'

/**
 * One of a `user_preferences` change's items, as Meta documents it: the user (`wa_id`, and its
 * BSUID `user_id` when given), `category` `marketing_messages`, `value` `stop` or `resume`, and a
 * Unix time. Unknown properties are allowed: Meta adds fields over time.
 */
const Preference = Type.Object({
  wa_id: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{7,14}$' })),
  user_id: Type.Optional(Type.String()),
  category: Type.String(),
  value: Type.String(),
  timestamp: Type.Optional(Type.Union([Type.String(), Type.Number()])),
})
const isPreference = Compile(Preference)
const isNumber = Compile(Type.Object({ phone_number_id: Type.String({ pattern: '^[0-9]{1,32}$' }) }))

export interface UserPreference {
  phoneNumberId: string
  recipients: string[]
  stop: boolean
}

/** A user stopped or resumed a business number's marketing messages, from Meta's webhook. */
export function readUserPreferences(body: WhatsAppWebhook): {
  preferences: UserPreference[]
  skipped: number
} {
  const preferences: UserPreference[] = []
  let skipped = 0
  for (const entry of body.entry) {
    for (const change of entry.changes) {
      if (change.field !== USER_PREFERENCES_FIELD) continue
      const value = change.value as { metadata?: unknown; user_preferences?: unknown }
      const items = Array.isArray(value.user_preferences) ? value.user_preferences : []
      if (!isNumber.Check(value.metadata)) {
        skipped += items.length
        continue
      }
      for (const item of items) {
        if (
          !isPreference.Check(item) ||
          item.category !== 'marketing_messages' ||
          !['stop', 'resume'].includes(item.value)
        ) {
          skipped++
          continue
        }
        const recipients = [
          item.wa_id === undefined ? undefined : `+${item.wa_id}`,
          item.user_id !== undefined && isUserId(item.user_id) ? item.user_id : undefined,
        ].filter((r): r is string => r !== undefined)
        if (recipients.length === 0) {
          skipped++
          continue
        }
        preferences.push({
          phoneNumberId: value.metadata.phone_number_id,
          recipients,
          stop: item.value === 'stop',
        })
      }
    }
  }
  return { preferences, skipped }
}

/**
 * Applies them: a `stop` adds a `marketing` entry (source `user_preferences`), a `resume` lifts the
 * entry this source (or a marketing one) made; an opt-out of everything (a STOP keyword) stays. Throws
 * when Postgres cannot record it, so Meta delivers the webhook again.
 */
export async function applyUserPreferences(
  app: FastifyInstance,
  log: FastifyBaseLogger,
  preferences: UserPreference[],
  now: Date,
): Promise<number> {
  let applied = 0
  for (const preference of preferences) {
    const senderId = app.sending.rules.senderOfNumber(preference.phoneNumberId) ?? DEFAULT_SENDER_ID
    for (const recipient of preference.recipients) {
      if (preference.stop) {
        const { changed } = await optOut(
          app.deps,
          log,
          {
            phoneNumberId: preference.phoneNumberId,
            senderId,
            recipient,
            scope: 'marketing',
            source: 'user_preferences',
            reason: 'The user stopped marketing messages in WhatsApp',
            createdBy: 'platform',
          },
          now,
        )
        if (changed) applied++
        continue
      }
      const removed = await optIn(
        app.deps,
        log,
        { phoneNumberId: preference.phoneNumberId, recipient, onlyScope: 'marketing' },
        { actor: 'platform', reason: 'The user resumed marketing messages in WhatsApp' },
        now,
      )
      if (removed) applied++
    }
  }
  return applied
}
