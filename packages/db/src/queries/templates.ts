import type { TemplateListQuery, TemplateVariables } from '@dispatch/contracts'
import { and, count, eq, ilike, inArray, isNotNull, isNull, lt, notInArray, or, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { type MessageTemplateRow, messageTemplates } from '../schema/message-templates.ts'
import { senders } from '../schema/senders.ts'
import { likePattern, offsetOf, ordering, whereAll } from './list-helpers.ts'

/** One template as a sync read it from the platform, ready to store. */
export interface SyncedTemplate {
  platformTemplateId: string
  name: string
  language: string
  status: string
  rejectedReason: string | null
  category: string | null
  quality: string | null
  parameterFormat: string
  components: unknown[]
  variables: TemplateVariables
}

export interface CatalogChanges {
  added: number
  changed: number
  removed: number
  total: number
}

/** JSON with object keys sorted: Postgres' jsonb gives keys back in its own order, not the platform's. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  )

/** The fields whose difference makes a template `changed` for a sync's count. */
const sameTemplate = (row: MessageTemplateRow, t: SyncedTemplate) =>
  row.platformTemplateId === t.platformTemplateId &&
  row.status === t.status &&
  row.rejectedReason === t.rejectedReason &&
  row.category === t.category &&
  row.quality === t.quality &&
  row.parameterFormat === t.parameterFormat &&
  canonical(row.components) === canonical(t.components)

/**
 * Makes a sender's catalog what the platform listed, in one transaction: new templates added,
 * differing ones updated (their `updatedAt` moves, which tells the API's caches), those the platform
 * no longer lists removed; and the sender marked synced. Templates are matched by name and language
 * (Meta's identity for a send). Answers the counts.
 */
export async function replaceSenderTemplates(
  db: Db,
  senderId: string,
  templates: SyncedTemplate[],
  now: Date,
): Promise<CatalogChanges> {
  return db.transaction(async (tx) => {
    const existing = await tx.select().from(messageTemplates).where(eq(messageTemplates.senderId, senderId))
    const byKey = new Map(existing.map((row) => [`${row.name}\u0000${row.language}`, row]))
    // The platform's list, one per name and language (a duplicate keeps the last one listed).
    const listed = new Map(templates.map((t) => [`${t.name}\u0000${t.language}`, t]))
    let added = 0
    let changed = 0
    for (const [key, template] of listed) {
      const row = byKey.get(key)
      if (row && sameTemplate(row, template)) continue
      if (row) changed++
      else added++
    }
    const keep = existing.filter((row) => listed.has(`${row.name}\u0000${row.language}`)).map((r) => r.id)
    const removed = existing.length - keep.length
    await tx
      .delete(messageTemplates)
      .where(
        keep.length > 0
          ? and(eq(messageTemplates.senderId, senderId), notInArray(messageTemplates.id, keep))
          : eq(messageTemplates.senderId, senderId),
      )
    const rows = [...listed.values()]
    for (let i = 0; i < rows.length; i += 500) {
      const chunk = rows.slice(i, i + 500)
      await tx
        .insert(messageTemplates)
        .values(chunk.map((t) => ({ ...t, senderId, syncedAt: now, createdAt: now, updatedAt: now })))
        .onConflictDoUpdate({
          target: [messageTemplates.senderId, messageTemplates.name, messageTemplates.language],
          set: {
            platformTemplateId: sqlExcluded('platform_template_id'),
            status: sqlExcluded('status'),
            rejectedReason: sqlExcluded('rejected_reason'),
            category: sqlExcluded('category'),
            quality: sqlExcluded('quality'),
            parameterFormat: sqlExcluded('parameter_format'),
            components: sqlExcluded('components'),
            variables: sqlExcluded('variables'),
            syncedAt: now,
            // Only a template that differs moves: the API's caches reload what moved.
            updatedAt: sqlChangedAt(now),
          },
        })
    }
    await tx.update(senders).set({ templatesSyncedAt: now }).where(eq(senders.id, senderId))
    return { added, changed, removed, total: rows.length }
  })
}

const sqlExcluded = (column: string) => sql.raw(`excluded.${column}`)

/** `now` for a row the upsert changes, its old time for one it leaves as it was. */
const CHANGED_COLUMNS = [
  'platform_template_id',
  'status',
  'rejected_reason',
  'category',
  'quality',
  'parameter_format',
  'components',
]
const sqlChangedAt = (now: Date) =>
  sql`case when (${sql.raw(CHANGED_COLUMNS.map((c) => `message_templates.${c}`).join(', '))})
    is distinct from (${sql.raw(CHANGED_COLUMNS.map((c) => `excluded.${c}`).join(', '))})
    then ${now.toISOString()}::timestamptz else message_templates.updated_at end`

const orderColumns = { name: messageTemplates.name, updatedAt: messageTemplates.updatedAt } as const

/**
 * One page of the catalogs of `senderIds` (one sender's for an admin, every sender a pooled key may
 * use), with the list's filters.
 */
export async function listTemplates(db: Db, senderIds: readonly string[], query: TemplateListQuery) {
  const pattern = query.q ? likePattern(query.q) : undefined
  const where = whereAll([
    inArray(messageTemplates.senderId, [...senderIds]),
    query.name ? eq(messageTemplates.name, query.name) : undefined,
    query.language ? eq(messageTemplates.language, query.language) : undefined,
    query.status ? eq(messageTemplates.status, query.status) : undefined,
    query.category ? eq(messageTemplates.category, query.category) : undefined,
    pattern
      ? or(ilike(messageTemplates.name, pattern), ilike(messageTemplates.platformTemplateId, pattern))
      : undefined,
  ])
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(messageTemplates)
      .where(where)
      .orderBy(
        ...ordering(
          query.order,
          orderColumns[query.orderField],
          messageTemplates.language,
          messageTemplates.id,
        ),
      )
      .limit(query.take)
      .offset(offsetOf(query)),
    db.select({ value: count() }).from(messageTemplates).where(where),
  ])
  return { rows, itemCount: total?.value ?? 0 }
}

/** Senders with an account whose catalog was never synced, or not since `staleBefore`. */
export async function listSendersToSync(db: Db, staleBefore: Date): Promise<string[]> {
  const rows = await db
    .select({ id: senders.id })
    .from(senders)
    .where(
      and(
        isNotNull(senders.wabaId),
        or(isNull(senders.templatesSyncedAt), lt(senders.templatesSyncedAt, staleBefore)),
      ),
    )
    .orderBy(senders.id)
  return rows.map((row) => row.id)
}
