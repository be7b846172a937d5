import { and, desc, eq, gte, inArray, isNotNull, lt, ne, or, type SQL } from 'drizzle-orm'
import { apiKeys } from '../schema/api-keys.ts'
import { messages } from '../schema/messages.ts'
import { senderPoolMembers } from '../schema/sender-pools.ts'
import { senders } from '../schema/senders.ts'
import type { Executor } from './executor.ts'

/**
 * A reply to a number of a sender pool that no message from that number explains (docs/sender-pools.md,
 * "Replies"): the key bound to a pool this number is in that last wrote to the user from any of the
 * pool's numbers, within `windowMs` before the reply. So a user answering on member B what they got
 * from member A reaches the key. Never a revoked key; null when none.
 */
export async function routePoolReply(
  tx: Executor,
  reply: { phoneNumberId: string; at: number; windowMs: number },
  who: { phone: string | null; userId: string | null },
): Promise<string | null> {
  const recipient: SQL | undefined = or(
    who.phone === null ? undefined : eq(messages.phone, who.phone),
    who.userId === null ? undefined : eq(messages.userId, who.userId),
  )
  if (!recipient) return null
  const poolsOfNumber = tx
    .select({ poolId: senderPoolMembers.poolId })
    .from(senderPoolMembers)
    .innerJoin(senders, eq(senders.id, senderPoolMembers.senderId))
    .where(eq(senders.phoneNumberId, reply.phoneNumberId))
  const [recent] = await tx
    .select({ apiKeyId: messages.apiKeyId })
    .from(messages)
    .innerJoin(
      apiKeys,
      and(
        eq(apiKeys.id, messages.apiKeyId),
        ne(apiKeys.status, 'revoked'),
        isNotNull(apiKeys.senderPoolId),
        inArray(apiKeys.senderPoolId, poolsOfNumber),
      ),
    )
    // Sent from a number of the key's own pool.
    .innerJoin(
      senderPoolMembers,
      and(
        eq(senderPoolMembers.poolId, apiKeys.senderPoolId),
        eq(senderPoolMembers.senderId, messages.senderId),
      ),
    )
    .where(
      and(
        recipient,
        gte(messages.sentAt, new Date(reply.at - reply.windowMs)),
        lt(messages.sentAt, new Date(reply.at + 1000)),
      ),
    )
    .orderBy(desc(messages.sentAt), desc(messages.id))
    .limit(1)
  return recent?.apiKeyId ?? null
}
