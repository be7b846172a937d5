import type { TransactionSql } from 'postgres'
import type { Sql } from '../client.ts'
import { SENDER_CHANGED_OUTCOME } from '../schema/message-attempts.ts'

/**
 * A pooled message's move off a number that left its pool's rotation (docs/sender-pools.md,
 * "Messages waiting on a fallen number"), as its `message_attempts` row records it.
 */
export interface MessageSenderChange {
  /** The sender it waited on. */
  from: string
  /** The pool member it goes through since. */
  to: string
  /** Why `from` was out of rotation (its `outOfRotation`: `quality_red`, `account_banned`…). */
  reason: string
  at: Date
}

interface SenderChangeRow {
  from_sender_id: string | null
  to_sender_id: string | null
  error_code: string
  created_at: Date
}

export const senderChangeOf = (row: SenderChangeRow): MessageSenderChange => ({
  from: row.from_sender_id ?? '',
  to: row.to_sender_id ?? '',
  reason: row.error_code,
  at: new Date(row.created_at),
})

/** No move is older than its message's acceptance (less a day for the clocks of the API and the workers). */
const MOVES_SINCE_MS = 86_400_000

/**
 * The message's latest move to another pool member, if it was ever moved: read in the partitions
 * from its acceptance on, by `message_attempts_message_id_idx`.
 */
export async function findLatestSenderChange(
  sql: Sql,
  messageId: string,
  acceptedAt: Date,
): Promise<MessageSenderChange | undefined> {
  const since = new Date(acceptedAt.getTime() - MOVES_SINCE_MS).toISOString()
  const [row] = await sql<SenderChangeRow[]>`
    select from_sender_id, to_sender_id, error_code, created_at from message_attempts
    where message_id = ${messageId} and created_at >= ${since}::timestamptz
      and outcome = ${SENDER_CHANGED_OUTCOME}
    order by created_at desc, id desc limit 1`
  return row ? senderChangeOf(row) : undefined
}

/** What the move a worker made writes: one `message_attempts` row (`recordSenderChange`). */
export interface MessageSenderChangeRecord extends MessageSenderChange {
  messageId: string
}

/**
 * Records a move on the message's timeline, whatever its key's webhook endpoints: a row of its
 * own, so a message whose record is not written yet (queued) keeps it too. In the caller's
 * transaction (`sql` may be one).
 */
export async function recordSenderChange(
  sql: Sql | TransactionSql,
  move: MessageSenderChangeRecord,
): Promise<void> {
  await sql`
    insert into message_attempts (message_id, attempt, outcome, error_code, from_sender_id, to_sender_id, created_at)
    values (${move.messageId}, 0, ${SENDER_CHANGED_OUTCOME}, ${move.reason}, ${move.from}, ${move.to},
      ${move.at.toISOString()}::timestamptz)`
}
