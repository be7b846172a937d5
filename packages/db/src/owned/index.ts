import type { Db } from '../client.ts'
import { type Caller, ownerOf } from './caller.ts'
import { ownedErasures } from './erasures.ts'
import { ownedExport } from './export.ts'
import { ownedMessages } from './messages.ts'
import { ownedSuppressions } from './suppressions.ts'
import { ownedWebhooks } from './webhooks.ts'

/** The data access of one key route's caller: nothing of another tenant (or key) is reachable. */
export function owned(db: Db, caller: Caller) {
  return {
    owner: ownerOf(caller),
    suppressions: ownedSuppressions(db, caller),
    exportPages: ownedExport(db, caller),
    erasures: ownedErasures(db, caller),
    webhooks: ownedWebhooks(db, caller),
    messages: ownedMessages(db, caller),
  }
}
export type Owned = ReturnType<typeof owned>

export { type Caller, ownerOf } from './caller.ts'
