import type { WebhookEndpointListQuery } from '@dispatch/contracts'
import type { SecretBox } from '@dispatch/runtime'
import { and, count, eq, ilike, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { type WebhookEndpointRow, webhookEndpoints } from '../schema/webhook-endpoints.ts'
import { webhookAttempts } from '../schema/webhook-events.ts'
import { likePattern, offsetOf, ordering, whereAll } from './list-helpers.ts'

export interface NewWebhookEndpoint {
  apiKeyId: string
  url: string
  events: string[]
  description: string | null
  /** The signing secret as stored: sealed with the secret box (`v1.…`), never the secret itself. */
  secret: string
  now: Date
}

export async function insertWebhookEndpoint(db: Db, input: NewWebhookEndpoint): Promise<WebhookEndpointRow> {
  const { now, ...values } = input
  const [row] = await db
    .insert(webhookEndpoints)
    .values({ ...values, createdAt: now, updatedAt: now })
    .returning()
  if (!row) throw new Error('insert returned no webhook endpoint')
  return row
}

/**
 * Registers an endpoint unless its key already has `max`: counted and inserted under a lock on the
 * key's endpoints (a transaction-scoped advisory lock), so requests racing each other never pass the
 * bound together. Answers undefined when the key is at its bound.
 */
export async function insertWebhookEndpointWithin(
  db: Db,
  input: NewWebhookEndpoint,
  max: number,
): Promise<WebhookEndpointRow | undefined> {
  const { now, ...values } = input
  return db.transaction(async (tx) => {
    await tx.execute(
      sql`select pg_advisory_xact_lock(hashtextextended(${`webhook-endpoints:${input.apiKeyId}`}, 0))`,
    )
    const [held] = await tx
      .select({ n: count() })
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.apiKeyId, input.apiKeyId))
    if ((held?.n ?? 0) >= max) return undefined
    const [row] = await tx
      .insert(webhookEndpoints)
      .values({ ...values, createdAt: now, updatedAt: now })
      .returning()
    if (!row) throw new Error('insert returned no webhook endpoint')
    return row
  })
}

/** Every read and write is scoped to the owning key: another key's endpoint does not exist. */
const owned = (apiKeyId: string, id: string) =>
  and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.apiKeyId, apiKeyId))

export async function findWebhookEndpoint(db: Db, apiKeyId: string, id: string) {
  const [row] = await db.select().from(webhookEndpoints).where(owned(apiKeyId, id))
  return row
}

export async function listWebhookEndpoints(db: Db, apiKeyId: string, query: WebhookEndpointListQuery) {
  let search: SQL | undefined
  if (query.q) {
    const pattern = likePattern(query.q)
    search = or(ilike(webhookEndpoints.url, pattern), ilike(webhookEndpoints.description, pattern))
  }
  const where = whereAll([eq(webhookEndpoints.apiKeyId, apiKeyId), search])
  const column = query.orderField === 'updatedAt' ? webhookEndpoints.updatedAt : webhookEndpoints.createdAt
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(webhookEndpoints)
      .where(where)
      .orderBy(...ordering(query.order, column, webhookEndpoints.id))
      .limit(query.take)
      .offset(offsetOf(query)),
    db.select({ value: count() }).from(webhookEndpoints).where(where),
  ])
  return { rows, itemCount: total?.value ?? 0 }
}

export interface WebhookEndpointChanges {
  url?: string | undefined
  events?: string[] | undefined
  enabled?: boolean | undefined
}

export async function updateWebhookEndpoint(
  db: Db,
  apiKeyId: string,
  id: string,
  changes: WebhookEndpointChanges,
  now: Date,
) {
  const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined))
  // Enabled or disabled by its owner: whatever the service had recorded about its failures is over.
  const health = changes.enabled === undefined ? {} : { failingSince: null, disabledReason: null }
  const [row] = await db
    .update(webhookEndpoints)
    .set({ ...set, ...health, updatedAt: now })
    .where(owned(apiKeyId, id))
    .returning()
  return row
}

/** The endpoint and its attempts (which keep no foreign key to it: see webhookAttempts), at once. */
export async function deleteWebhookEndpoint(db: Db, apiKeyId: string, id: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const rows = await tx
      .delete(webhookEndpoints)
      .where(owned(apiKeyId, id))
      .returning({ id: webhookEndpoints.id })
    if (rows.length === 0) return false
    await tx.delete(webhookAttempts).where(eq(webhookAttempts.endpointId, id))
    return true
  })
}

/**
 * The new secret (given sealed) signs from now on; the current one becomes the previous, moved as
 * stored (sealed or, from before sealing, clear), and keeps signing until `previousExpiresAt`. A
 * rotation during another rotation's overlap drops the older previous secret.
 */
export async function rotateWebhookEndpointSecret(
  db: Db,
  apiKeyId: string,
  id: string,
  sealedSecret: string,
  previousExpiresAt: Date,
  now: Date,
) {
  const [row] = await db
    .update(webhookEndpoints)
    .set({
      previousSecret: sql`${webhookEndpoints.secret}`,
      previousSecretExpiresAt: previousExpiresAt,
      secret: sealedSecret,
      updatedAt: now,
    })
    .where(owned(apiKeyId, id))
    .returning()
  return row
}

/** What a sealed value starts with; a signing secret stored before sealing (`whsec_…`) does not. */
const SEALED_PREFIX = 'v1.'

/**
 * Seals every stored signing secret (current and previous) with the box's current key: those under
 * an older key (after a key rotation) and those stored clear before secrets were sealed. Each value
 * is written only if it is still the one read, so a rotation meanwhile is left alone (the next run
 * seals what it moved). Values no key of the box opens are counted, by endpoint, not changed.
 */
export async function resealWebhookSecrets(db: Db, box: SecretBox) {
  const rows = await db
    .select({
      id: webhookEndpoints.id,
      secret: webhookEndpoints.secret,
      previousSecret: webhookEndpoints.previousSecret,
    })
    .from(webhookEndpoints)
  const result = { total: 0, resealed: 0, wereClear: 0, unreadable: [] as string[] }
  const columns = [
    ['secret', webhookEndpoints.secret],
    ['previousSecret', webhookEndpoints.previousSecret],
  ] as const
  for (const row of rows) {
    for (const [field, column] of columns) {
      const stored = row[field]
      if (stored === null) continue
      result.total++
      const clear = !stored.startsWith(SEALED_PREFIX)
      if (!clear && !box.isStale(stored)) continue
      let secret: string
      try {
        secret = clear ? stored : box.open(stored)
      } catch {
        if (!result.unreadable.includes(row.id)) result.unreadable.push(row.id)
        continue
      }
      const sealed = box.seal(secret)
      const [updated] = await db
        .update(webhookEndpoints)
        .set(field === 'secret' ? { secret: sealed } : { previousSecret: sealed })
        .where(and(eq(webhookEndpoints.id, row.id), eq(column, stored)))
        .returning({ id: webhookEndpoints.id })
      if (!updated) continue
      result.resealed++
      if (clear) result.wereClear++
    }
  }
  return result
}
