import type { SuppressionListQuery } from '@dispatch/contracts'
import { EVERY_KEY } from '@dispatch/runtime'
import { and, asc, eq, inArray } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { listSuppressions, type NewSuppression, removeSuppression } from '../queries/suppressions.ts'
import { type SuppressionRow, suppressions } from '../schema/suppressions.ts'
import { type Caller, ownerOf } from './caller.ts'

/**
 * A key's view of the suppression list: the entries its tenant (or, without one, the key) added on
 * its sender, which it lists, reads and lifts; another owner's id is as if absent. The recipient's
 * own opt-outs it only asks about (`ofRecipient`): they block it, but only the recipient or an
 * admin lifts them.
 */
export function ownedSuppressions(db: Db, caller: Caller) {
  const owner = ownerOf(caller)
  const mine = and(eq(suppressions.owner, owner), eq(suppressions.senderId, caller.senderId))
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
    list: (query: SuppressionListQuery) => listSuppressions(db, query, caller.senderId, mine),
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
        { id, owner },
        { actor: `key:${caller.apiKeyId}`, reason, senderId: caller.senderId },
        at,
      ),
    /**
     * The entries that block the caller's sends to a recipient (its names and hashes): the
     * recipient's own and the caller's, never another tenant's; on its sender and on `alsoOn` (a
     * pooled key's pool's members, whose opt-outs block its sends too).
     */
    ofRecipient: (recipients: string[], alsoOn: readonly string[] = []) =>
      db
        .select()
        .from(suppressions)
        .where(
          and(
            alsoOn.length === 0
              ? eq(suppressions.senderId, caller.senderId)
              : inArray(suppressions.senderId, [caller.senderId, ...alsoOn]),
            inArray(suppressions.recipient, recipients),
            inArray(suppressions.owner, [EVERY_KEY, owner]),
          ),
        )
        .orderBy(asc(suppressions.createdAt), asc(suppressions.id)),
  }
}
