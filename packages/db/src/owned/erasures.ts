import type { Db } from '../client.ts'
import { createErasure, findErasure, type NewErasure } from '../queries/erasures.ts'
import type { Caller } from './caller.ts'

/**
 * A key's erasures: requested in its name (its own data, its tenant's opt-outs kept by hash: see
 * `eraseRecipientRows`), and read back only by it.
 */
export function ownedErasures(db: Db, caller: Caller) {
  return {
    create: (entry: Pick<NewErasure, 'subjectHash' | 'recipient'>, at: Date) =>
      createErasure(db, { ...entry, apiKeyId: caller.apiKeyId, requestedBy: `key:${caller.apiKeyId}` }, at),
    find: (id: string) => findErasure(db, id, caller.apiKeyId),
  }
}
