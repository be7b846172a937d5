import type { OutboundMessage } from '@dispatch/contracts'
import { type Db, findPlatformIds, isUuid } from '@dispatch/db'
import { PlatformError } from '../platforms/types.ts'

/**
 * A message as the platform must get it: a `replyTo` or a reaction's `messageId` that names a
 * Dispatch message of the same key (a UUID) becomes that message's wamid; a wamid stays as given.
 * Another key's message is unknown here, as on the key's routes: its id is neither confirmed nor
 * used. Costs a Postgres
 * read only for a message that names one of ours. One not sent yet is worth a retry (it is on its
 * way); an unknown one fails the message.
 */
export async function withPlatformReferences(
  db: Db,
  message: OutboundMessage,
  apiKeyId: string,
): Promise<OutboundMessage> {
  const replyTo = message.body.replyTo
  const reacted = message.type === 'reaction' ? message.body.reaction.messageId : undefined
  const ours = [replyTo, reacted].filter((id): id is string => id !== undefined && isUuid(id))
  if (ours.length === 0) return message
  const found = await findPlatformIds(db, [...new Set(ours.map((id) => id.toLowerCase()))], apiKeyId)
  const wamid = (id: string | undefined, field: string) => {
    if (id === undefined || !isUuid(id)) return id
    const platformId = found.get(id.toLowerCase())
    if (platformId === undefined) {
      throw new PlatformError(
        'REFERENCE_NOT_FOUND',
        'permanent',
        `${field} names no message Dispatch knows: ${id}`,
      )
    }
    if (platformId === null) {
      throw new PlatformError(
        'REFERENCE_NOT_SENT',
        'retryable',
        `${field} names a message not sent yet: ${id}`,
      )
    }
    return platformId
  }
  const body = { ...message.body, ...(replyTo === undefined ? {} : { replyTo: wamid(replyTo, 'replyTo') }) }
  if (message.type === 'reaction') {
    const reaction = { ...message.body.reaction, messageId: wamid(reacted, 'reaction.messageId') as string }
    return { type: 'reaction', body: { ...(body as typeof message.body), reaction } }
  }
  return { ...message, body } as OutboundMessage
}
