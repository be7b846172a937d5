import type { AcceptedWindow, MessageJob, MessageListQuery } from '@dispatch/contracts'
import type { Db } from '../client.ts'
import { messageHistory } from '../queries/console.ts'
import { findRoutedInboundMessage } from '../queries/inbound-messages.ts'
import { findFallback, findFallbacks } from '../queries/message-fallbacks.ts'
import { listMessages } from '../queries/message-list.ts'
import { findMessageById, markMessageCanceled, recordScheduledMessages } from '../queries/messages.ts'
import { findLatestSenderChange } from '../queries/sender-changes.ts'
import type { MessageRow } from '../schema/messages.ts'
import type { Caller } from './caller.ts'

/**
 * A key's messages and the replies routed to it: another key's (of its tenant too: messages belong
 * to keys) are as if absent.
 */
export function ownedMessages(db: Db, caller: Caller) {
  const key = caller.apiKeyId
  return {
    /** Its record, when it has one and it is the key's. */
    async find(id: string) {
      const row = await findMessageById(db, id)
      return row?.apiKeyId === key ? row : undefined
    },
    /** Its channel fallback (docs/fallback.md), when it has one and the message is the key's. */
    async fallback(id: string) {
      const row = await findFallback(db.$client, id)
      return row?.apiKeyId === key ? row : undefined
    },
    /** Its latest move to another pool member (docs/sender-pools.md), when the message is the key's. */
    async senderChange(row: MessageRow) {
      if (row.apiKeyId !== key) return undefined
      return findLatestSenderChange(db.$client, row.id, row.acceptedAt)
    },
    /** The channel fallbacks of a page of its messages, by id (another key's are left out). */
    async fallbacks(ids: string[]) {
      const found = await findFallbacks(db.$client, ids)
      for (const [id, row] of found) if (row.apiKeyId !== key) found.delete(id)
      return found
    },
    /** A page of its messages (`db`: the pool lists read from). */
    list: (query: MessageListQuery, window: AcceptedWindow = {}) => listMessages(db, key, query, window),
    /** A reply routed to the key. */
    reply: (id: string) => findRoutedInboundMessage(db, key, id),
    /** Lists the key's scheduled messages at once (another key's job is not written here). */
    recordScheduled: async (jobs: MessageJob[]) =>
      recordScheduledMessages(
        db,
        jobs.filter((job) => job.apiKeyId === key),
      ),
    /** Marks one of the key's messages canceled, if still `scheduled` or `queued`. */
    cancel: (id: string, at: Date) => markMessageCanceled(db, id, at, key),
    /** A record's attempts, retries and webhook events: one `find` answered (the key's own). */
    async history(row: MessageRow) {
      if (row.apiKeyId !== key) {
        return {
          attempts: [],
          senderChanges: [],
          retries: [],
          events: [],
          deliveries: [],
          fallback: undefined,
        }
      }
      return messageHistory(db, row.id)
    },
  }
}
