import { TEMPLATE_CHANGES_CHANNEL, type WhatsAppWebhook } from '@dispatch/contracts'
import { applyTemplateUpdate, type TemplateUpdate } from '@dispatch/db'
import type { FastifyBaseLogger } from 'fastify'
import Type from 'typebox'
import { Compile } from 'typebox/compile'
import type { ApiDeps } from '../../deps.ts'
import type { SkippedStatus } from './whatsapp-statuses.ts'

const TemplateId = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^[0-9]{1,32}$' })])
const Name = Type.String({ minLength: 1, maxLength: 512 })
const Language = Type.String({ minLength: 2, maxLength: 16 })
const Word = Type.String({ minLength: 1, maxLength: 64 })
const identity = {
  message_template_id: TemplateId,
  message_template_name: Name,
  message_template_language: Language,
}

/** The template fields of Meta's webhook, as its reference shows them; unknown properties allowed. */
const FIELDS = {
  message_template_status_update: Compile(
    Type.Object({
      ...identity,
      event: Word,
      reason: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    }),
  ),
  message_template_quality_update: Compile(
    Type.Object({ ...identity, new_quality_score: Word, previous_quality_score: Type.Optional(Word) }),
  ),
  template_category_update: Compile(
    Type.Object({ ...identity, new_category: Word, previous_category: Type.Optional(Word) }),
  ),
} as const
type TemplateField = keyof typeof FIELDS

/**
 * Events after which the template is (still) APPROVED: a FLAGGED one keeps sending until Meta
 * disables it (a later DISABLED event); REINSTATED and UNARCHIVED ones are approved again. Every
 * other event is the template's new status as given.
 */
const STILL_APPROVED = new Set(['FLAGGED', 'REINSTATED', 'UNARCHIVED'])

/** The template changes a delivery carries; a malformed one is skipped and reported by position. */
export function readTemplateUpdates(body: WhatsAppWebhook, now: Date) {
  const updates: TemplateUpdate[] = []
  const skipped: SkippedStatus[] = []
  body.entry.forEach((entry, e) => {
    entry.changes.forEach((change, c) => {
      if (!Object.hasOwn(FIELDS, change.field)) return
      const at = `entry[${e}].changes[${c}].value`
      const check = FIELDS[change.field as TemplateField]
      const value = change.value as Record<string, unknown>
      if (!entry.id || !/^[0-9]{1,32}$/.test(entry.id)) {
        skipped.push({ at: `entry[${e}].id`, reason: 'is not a WhatsApp Business Account id' })
        return
      }
      if (!check.Check(change.value)) {
        const [problem] = check.Errors(change.value)
        skipped.push({ at, reason: `${problem?.instancePath || '/'} ${problem?.message ?? 'is invalid'}` })
        return
      }
      const common = {
        wabaId: entry.id,
        templateId: String(value.message_template_id),
        name: value.message_template_name as string,
        language: value.message_template_language as string,
        at: now,
      }
      const upper = (key: string) =>
        typeof value[key] === 'string' ? (value[key] as string).toUpperCase() : null
      if (change.field === 'message_template_status_update') {
        const event = upper('event') as string
        const reason = typeof value.reason === 'string' && value.reason !== 'NONE' ? value.reason : null
        updates.push({
          ...common,
          kind: 'status',
          event,
          status: STILL_APPROVED.has(event) ? 'APPROVED' : event,
          reason,
        })
      } else if (change.field === 'message_template_quality_update') {
        const quality = upper('new_quality_score') as string
        updates.push({
          ...common,
          kind: 'quality',
          quality,
          previousQuality: upper('previous_quality_score'),
        })
      } else {
        const category = upper('new_category') as string
        updates.push({ ...common, kind: 'category', category, previousCategory: upper('previous_category') })
      }
    })
  })
  return { updates, skipped }
}

/**
 * Applies each change to the catalogs of the senders on that account, with its event for their
 * keys, then announces those senders so every API instance checks the next send against the new
 * state at once. A change for an account no sender has is acknowledged and dropped.
 */
export async function applyTemplateUpdates(
  deps: Pick<ApiDeps, 'db' | 'redis' | 'config'>,
  log: FastifyBaseLogger,
  updates: TemplateUpdate[],
  /** This instance's own cache, made current before Meta gets its 200. */
  reloadHere: (senderId: string) => Promise<void>,
): Promise<{ applied: number }> {
  let applied = 0
  for (const update of updates) {
    const senderIds = await applyTemplateUpdate(deps.db, update)
    if (senderIds.length === 0) {
      log.info(
        { kind: update.kind, templateId: update.templateId },
        'template update for an account no sender has',
      )
      continue
    }
    applied++
    log.info(
      { kind: update.kind, templateId: update.templateId, senders: senderIds.length },
      'template updated by the platform',
    )
    for (const senderId of senderIds) {
      await reloadHere(senderId)
      await deps.redis
        .publish(`${deps.config.QUEUE_PREFIX}:${TEMPLATE_CHANGES_CHANNEL}`, senderId)
        .catch((error) => {
          log.warn(
            { err: error, senderId },
            'template change not announced; instances catch up at their refresh',
          )
        })
    }
  }
  return { applied }
}
