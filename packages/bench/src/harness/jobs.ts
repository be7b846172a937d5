import { randomUUID } from 'node:crypto'
import type { MessageJob } from '@dispatch/contracts'

/** A text message as the API accepts it (normal priority, four hours to live), for `senderId` when given. */
export const textJob = (apiKeyId: string, senderId?: string): MessageJob => ({
  messageId: randomUUID(),
  apiKeyId,
  acceptedAt: new Date().toISOString(),
  ...(senderId === undefined ? {} : { senderId }),
  priority: 'normal',
  expiresAt: new Date(Date.now() + 4 * 3600_000).toISOString(),
  message: { type: 'text', body: { phone: '+5511987654321', text: 'Your code is 123456' } },
})
