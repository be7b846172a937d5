import type { Db } from '../client.ts'
import { type ExportInput, recipientExportPages } from '../queries/recipient-export.ts'
import { type Caller, ownerOf, sendersOf } from './caller.ts'

/**
 * Everything held about one recipient for the caller, a page at a time: its key's messages, replies
 * and events, and the suppression entries that block its sends to them (the recipient's own and its
 * tenant's, on its sender and a pooled key's pool's members), never another tenant's entry or reason.
 */
export const ownedExport =
  (db: Db, caller: Caller) => (input: Pick<ExportInput, 'identities' | 'hashes' | 'pageSize'>) =>
    recipientExportPages(db, {
      ...input,
      apiKeyId: caller.apiKeyId,
      senderIds: sendersOf(caller),
      owner: ownerOf(caller),
    })
