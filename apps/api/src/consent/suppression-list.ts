import {
  addSuppressions,
  type NewSuppression,
  type OutboxOnChange,
  removeSuppressions,
  type SuppressionRow,
} from '@dispatch/db'
import { copyOptOut, recipientHasher, writeOptOutCopy } from '@dispatch/runtime'
import type { FastifyBaseLogger } from 'fastify'
import type { ApiDeps } from '../deps.ts'

type Deps = Pick<ApiDeps, 'db' | 'redis' | 'config'>
type Where = Parameters<typeof removeSuppressions>[1][number]
type Audit = Parameters<typeof removeSuppressions>[2]

/** The recipient as the Redis copy is keyed: by its hash. */
const hashOf = (deps: Deps, recipient: string) => recipientHasher(deps.config)(recipient)

/**
 * Every change to the suppression list, as keywords, Meta's signals, keys and admins make it: first
 * the record (Postgres: a failure throws, so the caller can answer it), then the Redis copy sends are
 * checked against. The copy is best effort: one that misses a change is put right by the worker's
 * rebuild, and until the copy is marked complete a missing entry counts as unknown.
 */
export async function optOut(
  deps: Deps,
  log: FastifyBaseLogger,
  entry: NewSuppression,
  at: Date,
): Promise<{ row: SuppressionRow; changed: boolean }> {
  const [added] = await optOutAll(deps, log, [entry], at)
  return added as { row: SuppressionRow; changed: boolean }
}

/**
 * Several opt-outs in one transaction (every identity of one user), with `onChange`'s outbox row
 * (a keyword's confirmation) when any was recorded; then each is copied to Redis.
 */
export async function optOutAll(
  deps: Deps,
  log: FastifyBaseLogger,
  entries: NewSuppression[],
  at: Date,
  onChange?: OutboxOnChange,
): Promise<Array<{ row: SuppressionRow; changed: boolean }>> {
  const added = await addSuppressions(deps.db, entries, at, onChange)
  const prefix = deps.config.QUEUE_PREFIX
  for (const { row } of added) {
    const entry = {
      phoneNumberId: row.phoneNumberId,
      recipientHash: hashOf(deps, row.recipient),
      scope: row.scope,
      owner: row.owner,
    }
    await copyOptOut(deps.redis, prefix, entry).catch((error) =>
      log.warn({ err: error }, 'opt-out not copied to Redis or not announced to the workers'),
    )
  }
  return added
}

/** Lifts an entry (audited, with its reason), then drops it from the Redis copy. */
export async function optIn(
  deps: Deps,
  log: FastifyBaseLogger,
  where: Where,
  audit: Audit,
  at: Date,
): Promise<SuppressionRow | undefined> {
  const [removed] = await optInAll(deps, log, [where], audit, at)
  return removed
}

/** Several lifts in one transaction, with `onChange`'s outbox row when any was lifted; then Redis. */
export async function optInAll(
  deps: Deps,
  log: FastifyBaseLogger,
  wheres: Where[],
  audit: Audit,
  at: Date,
  onChange?: OutboxOnChange,
): Promise<Array<SuppressionRow | undefined>> {
  // A recipient's entry, or the one kept by its hash since it was erased: an opt-in lifts either.
  const withHash = wheres.map((where) =>
    'recipient' in where ? { ...where, recipientHash: hashOf(deps, where.recipient) } : where,
  )
  const removed = await removeSuppressions(deps.db, withHash, audit, at, onChange)
  await dropCopies(deps, log, removed)
  return removed
}

/** Drops lifted entries from the Redis copy, each from its owner's part of the value. */
export async function dropCopies(
  deps: Deps,
  log: FastifyBaseLogger,
  removed: Array<SuppressionRow | undefined>,
) {
  for (const row of removed) {
    if (!row) continue
    const entry = {
      phoneNumberId: row.phoneNumberId,
      recipientHash: hashOf(deps, row.recipient),
      owner: row.owner,
      scope: null,
    }
    await writeOptOutCopy(deps.redis, deps.config.QUEUE_PREFIX, entry).catch((error) =>
      log.warn({ err: error }, 'opt-in not copied to Redis; the rebuild will'),
    )
  }
}
