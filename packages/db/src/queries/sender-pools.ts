import {
  DEFAULT_SENDER_ID,
  portfolioOf,
  type SenderPoolListQuery,
  type SenderPoolMemberInput,
} from '@dispatch/contracts'
import { asc, count, eq, ilike, inArray } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { adminAuditLog } from '../schema/admin-audit-log.ts'
import { apiKeys } from '../schema/api-keys.ts'
import { type SenderPoolRow, senderPoolMembers, senderPools } from '../schema/sender-pools.ts'
import { type SenderRow, senders } from '../schema/senders.ts'
import { pgError } from './executor.ts'
import { likePattern, offsetOf, ordering, whereAll } from './list-helpers.ts'

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

/** A pool with its members in order (each with its sender's row) and how many keys are bound to it. */
export interface SenderPoolDetail {
  pool: SenderPoolRow
  members: { position: number; weight: number; sender: SenderRow }[]
  boundKeys: number
}

/** Why a pool's members were refused; the route turns each into its error. */
export type MembersProblem =
  | { problem: 'unknown_sender'; senderId: string }
  | { problem: 'duplicate_sender'; senderId: string }
  | { problem: 'business_mismatch'; senderId: string; portfolio: string; expected: string }

export type SenderPoolWriteResult =
  | { outcome: 'written'; detail: SenderPoolDetail }
  | { outcome: 'not_found' }
  | MembersProblem
  /** A bound key's own sender would leave the pool (its `senderId` must stay a member). */
  | { problem: 'member_in_use'; senderId: string; apiKeyIds: string[] }

const normalize = (id: string) => (id === DEFAULT_SENDER_ID ? id : id.toLowerCase())

/**
 * The senders of `members`, locked against deletion until the caller commits, or why they cannot
 * form a pool: an unknown or repeated sender, or one of another business portfolio than the first.
 */
async function checkMembers(
  tx: Tx,
  members: SenderPoolMemberInput[],
): Promise<{ rows: SenderRow[] } | MembersProblem> {
  const ids = members.map((m) => normalize(m.senderId))
  const seen = new Set<string>()
  for (const id of ids) {
    if (seen.has(id)) return { problem: 'duplicate_sender', senderId: id }
    seen.add(id)
  }
  const found = await tx.select().from(senders).where(inArray(senders.id, ids)).for('key share')
  const byId = new Map(found.map((row) => [row.id, row]))
  const rows: SenderRow[] = []
  for (const id of ids) {
    const row = byId.get(id)
    if (!row) return { problem: 'unknown_sender', senderId: id }
    rows.push(row)
  }
  const expected = portfolioOf(rows[0] as SenderRow)
  for (const row of rows) {
    const portfolio = portfolioOf(row)
    if (portfolio !== expected) return { problem: 'business_mismatch', senderId: row.id, portfolio, expected }
  }
  return { rows }
}

async function writeMembers(tx: Tx, poolId: string, members: SenderPoolMemberInput[]) {
  await tx.delete(senderPoolMembers).where(eq(senderPoolMembers.poolId, poolId))
  await tx.insert(senderPoolMembers).values(
    members.map((m, position) => ({
      poolId,
      senderId: normalize(m.senderId),
      position,
      weight: m.weight ?? 1,
    })),
  )
}

const memberView = (m: SenderPoolMemberInput) => ({ senderId: normalize(m.senderId), weight: m.weight ?? 1 })

async function detailOf(db: Db | Tx, pool: SenderPoolRow): Promise<SenderPoolDetail> {
  const [details] = await detailsOf(db, [pool])
  return details as SenderPoolDetail
}

async function detailsOf(db: Db | Tx, pools: SenderPoolRow[]): Promise<SenderPoolDetail[]> {
  if (pools.length === 0) return []
  const ids = pools.map((p) => p.id)
  const [members, keys] = await Promise.all([
    db
      .select({
        poolId: senderPoolMembers.poolId,
        position: senderPoolMembers.position,
        weight: senderPoolMembers.weight,
        sender: senders,
      })
      .from(senderPoolMembers)
      .innerJoin(senders, eq(senders.id, senderPoolMembers.senderId))
      .where(inArray(senderPoolMembers.poolId, ids))
      .orderBy(asc(senderPoolMembers.poolId), asc(senderPoolMembers.position)),
    db
      .select({ poolId: apiKeys.senderPoolId, value: count() })
      .from(apiKeys)
      .where(inArray(apiKeys.senderPoolId, ids))
      .groupBy(apiKeys.senderPoolId),
  ])
  return pools.map((pool) => ({
    pool,
    members: members
      .filter((m) => m.poolId === pool.id)
      .map(({ position, weight, sender }) => ({ position, weight, sender })),
    boundKeys: keys.find((k) => k.poolId === pool.id)?.value ?? 0,
  }))
}

/** Creates a pool and its members, with an audit row, in one transaction. */
export async function createSenderPool(
  db: Db,
  input: { name: string; members: SenderPoolMemberInput[]; actor: string; now: Date },
): Promise<SenderPoolWriteResult> {
  return db.transaction(async (tx) => {
    const checked = await checkMembers(tx, input.members)
    if ('problem' in checked) return checked
    const [pool] = await tx
      .insert(senderPools)
      .values({ name: input.name, createdAt: input.now, updatedAt: input.now })
      .returning()
    if (!pool) throw new Error('insert into sender_pools returned no row')
    await writeMembers(tx, pool.id, input.members)
    await tx.insert(adminAuditLog).values({
      actor: input.actor,
      action: 'sender_pool.create',
      targetType: 'sender_pool',
      targetId: pool.id,
      details: { name: pool.name, members: input.members.map(memberView) },
      createdAt: input.now,
    })
    return { outcome: 'written', detail: await detailOf(tx, pool) }
  })
}

/**
 * Renames a pool or replaces its members (the whole ordered list), with an audit row naming what
 * was and what is. The pool's row is locked first, so a key being bound to it at the same moment
 * (which takes a share lock on it) sees either the old members or the new ones, never a mix; a
 * member that is a bound key's own sender cannot leave (409).
 */
export async function updateSenderPool(
  db: Db,
  input: {
    id: string
    name?: string | undefined
    members?: SenderPoolMemberInput[] | undefined
    actor: string
    now: Date
  },
): Promise<SenderPoolWriteResult> {
  return db.transaction(async (tx) => {
    const [current] = await tx.select().from(senderPools).where(eq(senderPools.id, input.id)).for('update')
    if (!current) return { outcome: 'not_found' }
    const before = await detailOf(tx, current)
    const details: Record<string, unknown> = {}
    if (input.members) {
      const checked = await checkMembers(tx, input.members)
      if ('problem' in checked) return checked
      const staying = new Set(checked.rows.map((r) => r.id))
      const bound = await tx
        .select({ id: apiKeys.id, senderId: apiKeys.senderId })
        .from(apiKeys)
        .where(eq(apiKeys.senderPoolId, input.id))
      const stranded = bound.filter((k) => !staying.has(k.senderId ?? DEFAULT_SENDER_ID))
      const first = stranded[0]
      if (first) {
        return {
          problem: 'member_in_use',
          senderId: first.senderId ?? DEFAULT_SENDER_ID,
          apiKeyIds: stranded.map((k) => k.id),
        }
      }
      await writeMembers(tx, input.id, input.members)
      details.members = {
        from: before.members.map((m) => ({ senderId: m.sender.id, weight: m.weight })),
        to: input.members.map(memberView),
      }
    }
    if (input.name !== undefined && input.name !== current.name) {
      details.name = { from: current.name, to: input.name }
    }
    const [pool] = await tx
      .update(senderPools)
      .set({ ...(input.name === undefined ? {} : { name: input.name }), updatedAt: input.now })
      .where(eq(senderPools.id, input.id))
      .returning()
    if (!pool) throw new Error('update of a locked sender_pools row returned no row')
    await tx.insert(adminAuditLog).values({
      actor: input.actor,
      action: 'sender_pool.update',
      targetType: 'sender_pool',
      targetId: pool.id,
      details,
      createdAt: input.now,
    })
    return { outcome: 'written', detail: await detailOf(tx, pool) }
  })
}

/**
 * Deletes a pool no key is bound to (its members go with it), with an audit row. A key bound in
 * the meantime holds the foreign key: the delete fails and the answer is `in_use` all the same.
 */
export async function deleteSenderPool(
  db: Db,
  input: { id: string; actor: string; now: Date },
): Promise<{ outcome: 'deleted' | 'not_found' } | { outcome: 'in_use'; boundKeys: number }> {
  try {
    return await db.transaction(async (tx) => {
      const [current] = await tx.select().from(senderPools).where(eq(senderPools.id, input.id)).for('update')
      if (!current) return { outcome: 'not_found' as const }
      const before = await detailOf(tx, current)
      if (before.boundKeys > 0) return { outcome: 'in_use' as const, boundKeys: before.boundKeys }
      await tx.delete(senderPools).where(eq(senderPools.id, input.id))
      await tx.insert(adminAuditLog).values({
        actor: input.actor,
        action: 'sender_pool.delete',
        targetType: 'sender_pool',
        targetId: input.id,
        details: {
          name: current.name,
          members: before.members.map((m) => ({ senderId: m.sender.id, weight: m.weight })),
        },
        createdAt: input.now,
      })
      return { outcome: 'deleted' as const }
    })
  } catch (error) {
    if (pgError(error).code === '23503') return { outcome: 'in_use', boundKeys: 1 }
    throw error
  }
}

export async function findSenderPool(db: Db, id: string): Promise<SenderPoolDetail | undefined> {
  const [pool] = await db.select().from(senderPools).where(eq(senderPools.id, id))
  return pool ? detailOf(db, pool) : undefined
}

const orderColumns = { createdAt: senderPools.createdAt, name: senderPools.name } as const

export async function listSenderPools(db: Db, query: SenderPoolListQuery) {
  const where = whereAll([query.q ? ilike(senderPools.name, likePattern(query.q)) : undefined])
  const [pools, [total]] = await Promise.all([
    db
      .select()
      .from(senderPools)
      .where(where)
      .orderBy(...ordering(query.order, orderColumns[query.orderField], senderPools.id))
      .limit(query.take)
      .offset(offsetOf(query)),
    db.select({ value: count() }).from(senderPools).where(where),
  ])
  return { rows: await detailsOf(db, pools), itemCount: total?.value ?? 0 }
}

/**
 * The pool's members' ids in order, the pool and its member rows locked against change (and a
 * member's sender against deletion, which would delete its row) until the caller commits;
 * undefined: no such pool.
 */
export async function lockPoolMembers(tx: Tx, poolId: string): Promise<string[] | undefined> {
  const [pool] = await tx
    .select({ id: senderPools.id })
    .from(senderPools)
    .where(eq(senderPools.id, poolId))
    .for('key share')
  if (!pool) return undefined
  const rows = await tx
    .select({ senderId: senderPoolMembers.senderId })
    .from(senderPoolMembers)
    .where(eq(senderPoolMembers.poolId, poolId))
    .orderBy(asc(senderPoolMembers.position))
    .for('key share')
  return rows.map((r) => r.senderId)
}

/** A pool's member as the send path keeps it in memory: its place, weight, number and health. */
export interface PoolMemberHealthRow {
  poolId: string
  senderId: string
  position: number
  weight: number
  phoneNumberId: string
  wabaId: string | null
  state: SenderRow['state']
  accountStatus: string | null
  qualityRating: string | null
}

/**
 * Every pool's members with their senders' health, in order: what each API instance holds to
 * choose a pool's number without Postgres (apps/api/src/sending/pools/pool-cache.ts). One query;
 * pools are few (an admin's), their members at most 50 each.
 */
export async function loadPoolMembers(db: Db): Promise<PoolMemberHealthRow[]> {
  return db
    .select({
      poolId: senderPoolMembers.poolId,
      senderId: senderPoolMembers.senderId,
      position: senderPoolMembers.position,
      weight: senderPoolMembers.weight,
      phoneNumberId: senders.phoneNumberId,
      wabaId: senders.wabaId,
      state: senders.state,
      accountStatus: senders.accountStatus,
      qualityRating: senders.qualityRating,
    })
    .from(senderPoolMembers)
    .innerJoin(senders, eq(senders.id, senderPoolMembers.senderId))
    .orderBy(asc(senderPoolMembers.poolId), asc(senderPoolMembers.position))
}
