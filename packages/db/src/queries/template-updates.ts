import { DEFAULT_SENDER_ID } from '@dispatch/contracts'
import { sql } from 'drizzle-orm'
import type { Db } from '../client.ts'

/** One change Meta reported about a template of an account (its webhooks' `entry[].id`). */
export type TemplateUpdate = {
  wabaId: string
  /** Meta's template id. */
  templateId: string
  name: string
  language: string
  at: Date
} & (
  | { kind: 'status'; event: string; status: string; reason: string | null }
  | { kind: 'quality'; quality: string; previousQuality: string | null }
  | { kind: 'category'; category: string; previousCategory: string | null }
)

/** The event each kind of change becomes, for the keys of the senders on that account. */
export const TEMPLATE_EVENT_TYPES = {
  status: 'template.status_updated',
  quality: 'template.quality_updated',
  category: 'template.category_updated',
} as const

/**
 * Applies a template change to the catalog of every sender on that account (a template not in a
 * catalog yet is left for the next sync), and, in the same transaction, writes its event for each
 * key bound to such a sender that has a webhook endpoint (the default sender's keys are those bound
 * to none). Answers the senders on that account, whose caches must reload.
 */
export async function applyTemplateUpdate(db: Db, update: TemplateUpdate): Promise<string[]> {
  return db.transaction(async (tx) => {
    const senderRows = await tx.execute<{ id: string }>(
      sql`select id from senders where waba_id = ${update.wabaId} order by id`,
    )
    const senderIds = senderRows.map((row) => row.id)
    const at = update.at.toISOString()
    for (const senderId of senderIds) {
      const match = sql`sender_id = ${senderId}
        and (platform_template_id = ${update.templateId} or (name = ${update.name} and language = ${update.language}))`
      const [before] = await tx.execute<{
        status: string | null
        quality: string | null
        category: string | null
      }>(sql`select status, quality, category from message_templates where ${match} for update`)
      const set =
        update.kind === 'status'
          ? sql`status = ${update.status}, rejected_reason = ${update.reason}`
          : update.kind === 'quality'
            ? sql`quality = ${update.quality}`
            : sql`category = ${update.category}`
      await tx.execute(
        sql`update message_templates set ${set}, updated_at = ${at}::timestamptz where ${match}`,
      )
      const common = { senderId, templateId: update.templateId, name: update.name, language: update.language }
      const data =
        update.kind === 'status'
          ? {
              ...common,
              event: update.event,
              status: update.status,
              previousStatus: before?.status ?? null,
              reason: update.reason,
            }
          : update.kind === 'quality'
            ? {
                ...common,
                quality: update.quality,
                previousQuality: before?.quality ?? update.previousQuality,
              }
            : {
                ...common,
                category: update.category,
                previousCategory: before?.category ?? update.previousCategory,
              }
      await tx.execute(sql`
        select dispatch_emit_webhook_event(k.id, ${TEMPLATE_EVENT_TYPES[update.kind]}, null,
          ${JSON.stringify(data)}::jsonb, ${at}::timestamptz)
        from api_keys k
        where (k.sender_id = ${senderId} or (${senderId} = ${DEFAULT_SENDER_ID} and k.sender_id is null))
          and exists (select 1 from webhook_endpoints e where e.api_key_id = k.id)`)
    }
    return senderIds
  })
}
