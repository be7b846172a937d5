import type { Db } from '../client.ts'
import { inboundMessages } from '../schema/inbound-messages.ts'
import { messages } from '../schema/messages.ts'
import { messagesWithIds } from './message-ids.ts'
import { inboundMessagesWithIds } from './partitioned-ids.ts'

/**
 * The platform ids (wamids) of Dispatch messages, sent or received, by their Dispatch ids: what a
 * `replyTo` or a reaction names. A message not sent yet maps to null; an unknown id is absent.
 */
export async function findPlatformIds(db: Db, ids: string[]): Promise<Map<string, string | null>> {
  const found = new Map<string, string | null>()
  if (ids.length === 0) return found
  const [sent, received] = await Promise.all([
    db
      .select({ id: messages.id, platformMessageId: messages.platformMessageId })
      .from(messages)
      .where(messagesWithIds(ids)),
    db
      .select({ id: inboundMessages.id, platformMessageId: inboundMessages.platformMessageId })
      .from(inboundMessages)
      .where(inboundMessagesWithIds(ids)),
  ])
  for (const row of [...sent, ...received]) found.set(row.id, row.platformMessageId)
  return found
}
