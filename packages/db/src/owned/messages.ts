import type { AcceptedWindow, MessageListQuery } from '@dispatch/contracts'
import type { Db } from '../client.ts'
import { findRoutedInboundMessage } from '../queries/inbound-messages.ts'
import { listMessages } from '../queries/message-list.ts'
import { findMessageById } from '../queries/messages.ts'
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
    /** A page of its messages (`db`: the pool lists read from). */
    list: (query: MessageListQuery, window: AcceptedWindow = {}) => listMessages(db, key, query, window),
    /** A reply routed to the key. */
    reply: (id: string) => findRoutedInboundMessage(db, key, id),
  }
}
