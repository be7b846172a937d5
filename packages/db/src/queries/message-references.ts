import { and, eq } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { inboundMessages } from '../schema/inbound-messages.ts'
import { messages } from '../schema/messages.ts'
import { messagesWithIds } from './message-ids.ts'
import { inboundMessagesWithIds } from './partitioned-ids.ts'

/**
 * The platform ids (wamids) of one key's Dispatch messages, sent or received (replies routed to
 * it), by their Dispatch ids: what that key's `replyTo` or reaction names. A message not sent yet
 * maps to null; an unknown id, and another key's, is absent (never confirmed, never used).
 */
export async function findPlatformIds(
  db: Db,
  ids: string[],
  apiKeyId: string,
): Promise<Map<string, string | null>> {
  const found = new Map<string, string | null>()
  if (ids.length === 0) return found
  const [sent, received] = await Promise.all([
    db
      .select({ id: messages.id, platformMessageId: messages.platformMessageId })
      .from(messages)
      .where(and(messagesWithIds(ids), eq(messages.apiKeyId, apiKeyId))),
    db
      .select({ id: inboundMessages.id, platformMessageId: inboundMessages.platformMessageId })
      .from(inboundMessages)
      .where(and(inboundMessagesWithIds(ids), eq(inboundMessages.apiKeyId, apiKeyId))),
  ])
  for (const row of [...sent, ...received]) found.set(row.id, row.platformMessageId)
  return found
}
