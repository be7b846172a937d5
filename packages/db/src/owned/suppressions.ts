import type { SuppressionListQuery } from '@dispatch/contracts'
import { EVERY_KEY } from '@dispatch/runtime'
import { and, asc, eq, inArray } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { listSuppressions, type NewSuppression, removeSuppression } from '../queries/suppressions.ts'
import { type SuppressionRow, suppressions } from '../schema/suppressions.ts'
import { type Caller, ownerOf, sendersOf } from './caller.ts'

/**
 * A key's view of the suppression list: the entries its tenant (or, without one, the key) added on
 * its sender, and on every member of its pool for a pooled key (they block its sends there), which
 * it lists, reads and lifts; another owner's id, or one on another sender, is as if absent. The
 * recipient's own opt-outs it only asks about (`ofRecipient`): they block it, but only the recipient
 * or an admin lifts them.
 */
export function ownedSuppressions(db: Db, caller: Caller) {
  const owner = ownerOf(caller)
  const senders = sendersOf(caller)
  const onSenders = inArray(suppressions.senderId, senders)
  const mine = and(eq(suppressions.owner, owner), onSenders)
  return {
    /** A new entry of the caller's (source `api`), ready for `optOut`. */
    entry(fields: Pick<NewSuppression, 'phoneNumberId' | 'recipient' | 'scope' | 'reason'>): NewSuppression {
      return {
        ...fields,
        senderId: caller.senderId,
        source: 'api',
        createdBy: `key:${caller.apiKeyId}`,
        tenantId: caller.tenantId,
        apiKeyId: caller.apiKeyId,
      }
    },
    list: (query: SuppressionListQuery) => listSuppressions(db, query, undefined, mine),
    async find(id: string): Promise<SuppressionRow | undefined> {
      const [row] = await db
        .select()
        .from(suppressions)
        .where(and(eq(suppressions.id, id), mine))
      return row
    },
    /** Lifts one of the caller's entries (audited under the key, with the reason); undefined if none. */
    remove: (id: string, reason: string, at: Date) =>
      removeSuppression(
        db,
        { id, owner, senderIds: senders },
        { actor: `key:${caller.apiKeyId}`, reason },
        at,
      ),
    /**
     * The entries that block the caller's sends to a recipient (its names and hashes): the
     * recipient's own and the caller's, never another tenant's; on its sender and its pool's members.
     */
    ofRecipient: (recipients: string[]) =>
      db
        .select()
        .from(suppressions)
        .where(
          and(
            onSenders,
            inArray(suppressions.recipient, recipients),
            inArray(suppressions.owner, [EVERY_KEY, owner]),
          ),
        )
        .orderBy(asc(suppressions.createdAt), asc(suppressions.id)),
  }
}
