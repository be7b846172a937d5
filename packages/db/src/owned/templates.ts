import type { TemplateListQuery } from '@dispatch/contracts'
import type { Db } from '../client.ts'
import { listTemplates } from '../queries/templates.ts'
import type { Caller } from './caller.ts'

/** The templates of the caller's sender (what its template sends are checked against), no other's. */
export function ownedTemplates(db: Db, caller: Caller) {
  return {
    list: (query: TemplateListQuery) => listTemplates(db, caller.senderId, query),
  }
}
