import { DEFAULT_SENDER_ID } from '@dispatch/contracts'
import { type SQL, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { OUTBOX_NOTIFY_CHANNEL } from '../schema/outbox.ts'

/** What Meta reported of an account or a number; only the fields given change. */
export interface HealthChange {
  accountStatus?: string
  accountStatusReason?: string | null
  messagingLimitTier?: string
  qualityRating?: string
}

/** Which senders a report is about: every number of an account, or one number. */
export type HealthTarget =
  | { wabaId: string }
  | { displayPhoneNumber?: string | undefined; phoneNumberId?: string | undefined }

type HealthRow = {
  id: string
  display_name: string
  phone_number_id: string
  account_status: string | null
  account_status_reason: string | null
  messaging_limit_tier: string | null
  quality_rating: string | null
  health_updated_at: Date | null
}

/**
 * Stores a health report on the senders it names and, in the same transaction, writes a
 * `sender.updated` event for the keys bound to each (those with a webhook endpoint) and, when
 * `alertTo` is given and the account status changed to one in which sends fail, the admins' e-mail
 * through the outbox. A report that changes nothing writes nothing. Answers the senders it changed.
 */
export async function recordSenderHealth(
  db: Db,
  target: HealthTarget,
  change: HealthChange,
  event: { source: string; at: Date; alertTo?: string | undefined },
): Promise<string[]> {
  const where: SQL =
    'wabaId' in target
      ? sql`waba_id = ${target.wabaId}`
      : sql`(${target.displayPhoneNumber ?? null}::text is not null and display_phone_number = ${target.displayPhoneNumber ?? null})
           or (${target.phoneNumberId ?? null}::text is not null and phone_number_id = ${target.phoneNumberId ?? null})`
  const sets: SQL[] = []
  const differs: SQL[] = []
  const column = (name: string, value: string | null | undefined) => {
    if (value === undefined) return
    sets.push(sql`${sql.raw(name)} = ${value}`)
    differs.push(sql`${sql.raw(name)} is distinct from ${value}`)
  }
  column('account_status', change.accountStatus)
  column('account_status_reason', change.accountStatusReason)
  column('messaging_limit_tier', change.messagingLimitTier)
  column('quality_rating', change.qualityRating)
  if (sets.length === 0) return []
  const at = event.at.toISOString()
  return db.transaction(async (tx) => {
    const rows = await tx.execute<HealthRow>(sql`
      update senders set ${sql.join(sets, sql`, `)}, health_updated_at = ${at}::timestamptz
      where (${where}) and (${sql.join(differs, sql` or `)})
      returning id, display_name, phone_number_id, account_status, account_status_reason,
        messaging_limit_tier, quality_rating, health_updated_at`)
    for (const row of rows) {
      const data = {
        senderId: row.id,
        source: event.source,
        health: {
          accountStatus: row.account_status,
          accountStatusReason: row.account_status_reason,
          messagingLimitTier: row.messaging_limit_tier,
          qualityRating: row.quality_rating,
          updatedAt: at,
        },
      }
      await tx.execute(sql`
        select dispatch_emit_webhook_event(k.id, 'sender.updated', null, ${JSON.stringify(data)}::jsonb, ${at}::timestamptz)
        from api_keys k
        where (k.sender_id = ${row.id} or (${row.id} = ${DEFAULT_SENDER_ID} and k.sender_id is null))
          and exists (select 1 from webhook_endpoints e where e.api_key_id = k.id)`)
      if (event.alertTo && change.accountStatus !== undefined) {
        const payload = {
          to: event.alertTo,
          template: 'sender.account-alert',
          data: {
            senderId: row.id,
            displayName: row.display_name,
            phoneNumberId: row.phone_number_id,
            accountStatus: change.accountStatus,
            reason: change.accountStatusReason ?? event.source,
          },
        }
        await tx.execute(sql`insert into outbox (topic, payload, created_at)
          values ('email', ${JSON.stringify(payload)}::jsonb, ${at}::timestamptz)`)
        await tx.execute(sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, '')`)
      }
    }
    return rows.map((row) => row.id)
  })
}
