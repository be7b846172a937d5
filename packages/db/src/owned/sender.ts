import type { Db } from '../client.ts'
import { findSender } from '../queries/senders.ts'
import type { Caller } from './caller.ts'

/** The sender the caller's key sends through (its settings, its limit), no other. */
export function ownedSender(db: Db, caller: Caller) {
  return {
    find: () => findSender(db, caller.senderId),
  }
}
