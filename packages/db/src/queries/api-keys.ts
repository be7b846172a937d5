import {
  API_KEY_TRANSITIONS,
  type ApiKeyDecision,
  type ApiKeyLimits,
  type ApiKeyListQuery,
  type ApiKeyStatus,
  type AppEnv,
  contentRetentionOf,
  DEFAULT_SENDER_ID,
  type EmailOutboxPayload,
  type EmailTemplate,
  type KeyRevocationPayload,
  QueueNames,
  retentionHours,
} from '@dispatch/contracts'
import { and, asc, count, desc, eq, ilike, inArray, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { apiKeyAuditLog } from '../schema/api-key-audit-log.ts'
import { type ApiKeyRow, apiKeys } from '../schema/api-keys.ts'
import { OUTBOX_NOTIFY_CHANNEL, outbox } from '../schema/outbox.ts'
import { senders } from '../schema/senders.ts'
import { lockPoolMembers } from './sender-pools.ts'

export interface NewApiKey {
  keyHash: string
  keyPrefix: string
  environment: AppEnv
  clientName: string
  email: string
  scopes: string[]
  /** What the requester asked for. A request never binds a tenant: only an admin's approval does. */
  requestedTenantId: string | null
  createdAt: Date
}

export async function insertApiKey(db: Db, key: NewApiKey): Promise<ApiKeyRow> {
  const [row] = await db
    .insert(apiKeys)
    .values({ ...key, updatedAt: key.createdAt })
    .returning()
  if (!row) throw new Error('insert into api_keys returned no row')
  return row
}

export async function findApiKeyByHash(db: Db, keyHash: string): Promise<ApiKeyRow | undefined> {
  const [row] = await db.select().from(apiKeys).where(eq(apiKeys.keyHash, keyHash)).limit(1)
  return row
}

export async function findApiKeyById(db: Db, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, id)).limit(1)
  return row
}

export async function listApiKeyHistory(db: Db, id: string) {
  return db
    .select({
      actor: apiKeyAuditLog.actor,
      fromStatus: apiKeyAuditLog.fromStatus,
      toStatus: apiKeyAuditLog.toStatus,
      reason: apiKeyAuditLog.reason,
      changes: apiKeyAuditLog.changes,
      createdAt: apiKeyAuditLog.createdAt,
    })
    .from(apiKeyAuditLog)
    .where(eq(apiKeyAuditLog.apiKeyId, id))
    .orderBy(asc(apiKeyAuditLog.id))
}

const orderColumns = {
  createdAt: apiKeys.createdAt,
  updatedAt: apiKeys.updatedAt,
  clientName: apiKeys.clientName,
  status: apiKeys.status,
} as const

/** Escapes LIKE wildcards so `q` is searched as the literal text the admin typed. */
const likePattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

export async function listApiKeys(db: Db, query: ApiKeyListQuery) {
  const filters: SQL[] = []
  if (query.status) filters.push(eq(apiKeys.status, query.status))
  if (query.tenantId) filters.push(eq(apiKeys.tenantId, query.tenantId))
  if (query.requestedTenantId) filters.push(eq(apiKeys.requestedTenantId, query.requestedTenantId))
  if (query.q) {
    const pattern = likePattern(query.q)
    const match = or(
      ilike(apiKeys.clientName, pattern),
      ilike(apiKeys.email, pattern),
      ilike(apiKeys.keyPrefix, pattern),
    )
    if (match) filters.push(match)
  }
  const where = filters.length > 0 ? and(...filters) : undefined
  const direction = query.order === 'ASC' ? asc : desc
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(apiKeys)
      .where(where)
      // The id breaks ties so pages never overlap or skip rows.
      .orderBy(direction(orderColumns[query.orderField]), direction(apiKeys.id))
      .limit(query.take)
      .offset((query.page - 1) * query.take),
    db.select({ value: count() }).from(apiKeys).where(where),
  ])
  return { rows, itemCount: total?.value ?? 0 }
}

export interface DecideApiKeyInput {
  id: string
  decision: ApiKeyDecision
  actor: string
  reason: string | null
  /**
   * The tenant an approval binds, only ever from the admin's own word: without it the key is
   * approved bound to none, whatever tenant was requested.
   */
  tenantId?: string | undefined
  now: Date
}

export type DecideApiKeyResult =
  | { outcome: 'decided'; key: ApiKeyRow; from: ApiKeyStatus }
  | { outcome: 'not_found' }
  | { outcome: 'invalid_transition'; status: ApiKeyStatus }

const decisionEmail: Record<ApiKeyDecision, EmailTemplate> = {
  approve: 'api-key.approved',
  reject: 'api-key.rejected',
  revoke: 'api-key.revoked',
}

/**
 * Applies an admin decision in one transaction: the status change, its audit row and the outbox
 * row for the e-mail (and, for a revocation, the sweep of the key's messages) commit together or not at all. The update is conditional on the expected
 * current status, so of two admins deciding the same key at once exactly one wins: the other's
 * update finds no row in the `from` status once the first commits.
 */
export async function decideApiKey(db: Db, input: DecideApiKeyInput): Promise<DecideApiKeyResult> {
  const { from, to } = API_KEY_TRANSITIONS[input.decision]
  return db.transaction(async (tx) => {
    const [key] = await tx
      .update(apiKeys)
      .set({
        status: to,
        statusReason: input.reason,
        decidedBy: input.actor,
        decidedAt: input.now,
        updatedAt: input.now,
        ...(input.decision === 'approve' ? { tenantId: input.tenantId ?? null } : {}),
      })
      .where(and(eq(apiKeys.id, input.id), eq(apiKeys.status, from)))
      .returning()
    if (!key) {
      const [current] = await tx
        .select({ status: apiKeys.status })
        .from(apiKeys)
        .where(eq(apiKeys.id, input.id))
      return current ? { outcome: 'invalid_transition', status: current.status } : { outcome: 'not_found' }
    }
    await tx.insert(apiKeyAuditLog).values({
      apiKeyId: key.id,
      actor: input.actor,
      fromStatus: from,
      toStatus: to,
      reason: input.reason,
      createdAt: input.now,
    })
    const email: EmailOutboxPayload = {
      to: key.email,
      template: decisionEmail[input.decision],
      data: { keyId: key.id, clientName: key.clientName, keyPrefix: key.keyPrefix, reason: input.reason },
    }
    await tx.insert(outbox).values({ topic: 'email', payload: email, createdAt: input.now })
    if (input.decision === 'revoke') {
      // The key's queued and scheduled messages are canceled by a worker (lifecycle/revocation.ts):
      // the sweep is committed with the revocation, so a crash after the commit loses nothing.
      const sweep: KeyRevocationPayload = { apiKeyId: key.id }
      await tx
        .insert(outbox)
        .values({ topic: QueueNames.keyRevocations, payload: sweep, createdAt: input.now })
    }
    await tx.execute(sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, '')`)
    return { outcome: 'decided', key, from }
  })
}

export interface UpdateApiKeyLimitsInput {
  id: string
  actor: string
  /** Only the fields to set; null resets one to the service's default. */
  limits: Partial<ApiKeyLimits> & { senderPoolId?: string | null | undefined }
  now: Date
}

export type UpdateApiKeyLimitsResult =
  | { outcome: 'updated'; key: ApiKeyRow; changes: Record<string, { from: unknown; to: unknown }> }
  | { outcome: 'unchanged'; key: ApiKeyRow }
  | { outcome: 'not_found' }
  | { outcome: 'unknown_sender'; senderId: string }
  | { outcome: 'unknown_pool'; senderPoolId: string }
  | { outcome: 'sender_not_in_pool'; senderId: string; senderPoolId: string }

const LIMIT_FIELDS = [
  'senderId',
  'senderPoolId',
  'ratePerSecond',
  'dailyQuota',
  'transactional',
  'quietHours',
] as const

/** Equal as stored: jsonb keeps an object's keys in its own order. */
const sameValue = (a: unknown, b: unknown) =>
  a === b || (typeof a === 'object' && typeof b === 'object' && canonical(a) === canonical(b))
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => x.localeCompare(y)))
      : v,
  )

/**
 * Sets a key's limits, whatever its status, in one transaction with one audit row naming each
 * field that changed (`{field: {from, to}}`, the status unchanged). The row is locked first, so
 * two admins' changes apply one after the other and each audit row tells what it really changed;
 * a change to nothing writes nothing. `senderId: "default"` is stored as null (the default sender),
 * and any other sender is locked against deletion until the change commits.
 */
export async function updateApiKeyLimits(
  db: Db,
  input: UpdateApiKeyLimitsInput,
): Promise<UpdateApiKeyLimitsResult> {
  const wanted: UpdateApiKeyLimitsInput['limits'] = { ...input.limits }
  if (wanted.senderId === DEFAULT_SENDER_ID) wanted.senderId = null
  return db.transaction(async (tx) => {
    const [current] = await tx.select().from(apiKeys).where(eq(apiKeys.id, input.id)).for('update')
    if (!current) return { outcome: 'not_found' }
    const changes: Record<string, { from: unknown; to: unknown }> = {}
    const set: Partial<ApiKeyLimits & { contentRetentionHours: number | null; senderPoolId: string | null }> =
      {}
    for (const field of LIMIT_FIELDS) {
      const to = wanted[field]
      if (to === undefined || sameValue(to, current[field])) continue
      changes[field] = { from: current[field], to }
      Object.assign(set, { [field]: to })
    }
    // Wire `retain` | `discard` | hours; stored as hours (null, 0, N): see `retentionHours`.
    const retention = wanted.contentRetention
    if (retention !== undefined && retentionHours(retention) !== current.contentRetentionHours) {
      changes.contentRetention = { from: contentRetentionOf(current.contentRetentionHours), to: retention }
      Object.assign(set, { contentRetentionHours: retentionHours(retention) })
    }
    if (Object.keys(changes).length === 0) return { outcome: 'unchanged', key: current }
    if (typeof wanted.senderId === 'string' && changes.senderId) {
      const [sender] = await tx
        .select({ id: senders.id })
        .from(senders)
        .where(eq(senders.id, wanted.senderId))
        .for('key share')
      if (!sender) return { outcome: 'unknown_sender', senderId: wanted.senderId }
    }
    // Bound to a pool, the key's own sender is one of its members (docs/sender-pools.md): binding a pool
    // without naming a sender moves a key whose sender is not a member to the pool's first one.
    const poolId = set.senderPoolId !== undefined ? set.senderPoolId : current.senderPoolId
    if (poolId && (changes.senderPoolId || changes.senderId)) {
      const members = await lockPoolMembers(tx, poolId)
      if (!members) return { outcome: 'unknown_pool', senderPoolId: poolId }
      const own = (set.senderId !== undefined ? set.senderId : current.senderId) ?? DEFAULT_SENDER_ID
      const first = members[0]
      if (!members.includes(own)) {
        if (wanted.senderId !== undefined || !first) {
          return { outcome: 'sender_not_in_pool', senderId: own, senderPoolId: poolId }
        }
        // A member: locked against deletion with the pool's members (their rows reference it).
        set.senderId = first === DEFAULT_SENDER_ID ? null : first
        changes.senderId = { from: current.senderId, to: set.senderId }
      }
    }
    const [key] = await tx
      .update(apiKeys)
      .set({ ...set, updatedAt: input.now })
      .where(eq(apiKeys.id, input.id))
      .returning()
    if (!key) throw new Error('update of a locked api_keys row returned no row')
    await tx.insert(apiKeyAuditLog).values({
      apiKeyId: key.id,
      actor: input.actor,
      fromStatus: key.status,
      toStatus: key.status,
      reason: null,
      changes,
      createdAt: input.now,
    })
    return { outcome: 'updated', key, changes }
  })
}

/** Every revoked key's id: what a delivering worker keeps in memory (messages/revoked-keys.ts). */
export async function listRevokedApiKeyIds(db: Db): Promise<string[]> {
  const rows = await db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.status, 'revoked'))
  return rows.map((r) => r.id)
}

/** The client names of these keys, by id (a page of messages shows who sent each). */
export async function apiKeyClientNames(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  const unique = [...new Set(ids)]
  if (unique.length === 0) return new Map()
  const rows = await db
    .select({ id: apiKeys.id, clientName: apiKeys.clientName })
    .from(apiKeys)
    .where(inArray(apiKeys.id, unique))
  return new Map(rows.map((r) => [r.id, r.clientName]))
}
