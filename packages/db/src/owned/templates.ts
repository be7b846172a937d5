import type { KeyTemplateListQuery } from '@dispatch/contracts'
import type { Db } from '../client.ts'
import { listTemplates } from '../queries/templates.ts'
import { type Caller, sendersOf } from './caller.ts'

/**
 * The catalogs of the caller's senders (what its template sends are checked against: a pooled
 * key's, the catalog of the member that sends each), no other's; `senderId` one of them.
 */
export function ownedTemplates(db: Db, caller: Caller) {
  return {
    list: async ({ senderId, ...query }: KeyTemplateListQuery) => {
      const senders = sendersOf(caller)
      if (senderId === undefined) return listTemplates(db, senders, query)
      // Another sender's (or none's) matches nothing: no catalog but the caller's is read.
      if (!senders.includes(senderId)) return { rows: [], itemCount: 0 }
      return listTemplates(db, [senderId], query)
    },
  }
}
