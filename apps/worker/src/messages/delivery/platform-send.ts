import type { OutboundMessage } from '@dispatch/contracts'
import { PlatformError } from '../../platforms/types.ts'
import { traced } from '../../tracing.ts'
import { withPlatformReferences } from '../references.ts'
import { fallbackMessage, WINDOW_CLOSED_CODE } from '../service-window.ts'
import { failedSend } from './failed-send.ts'
import type { Cleared, Disposition, MessageDelivery } from './types.ts'

/** Handed to the platform, which answered with its id. */
export type Sent = { kind: 'sent'; platformMessageId: string; fallbackUsed: boolean }

const asPlatformError = (error: unknown) =>
  error instanceof PlatformError
    ? error
    : new PlatformError('INTERNAL', 'retryable', (error as Error)?.message ?? String(error))

/** One call of the sender's platform adapter, traced. */
function callPlatform({ data, lane, deps }: MessageDelivery, message: OutboundMessage) {
  const { platform, senderId } = lane
  return traced(`${platform.name} send`, { 'dispatch.sender_id': senderId }, async () =>
    platform.deliver({
      messageId: data.messageId,
      message: await withPlatformReferences(deps.db, message, data.apiKeyId),
    }),
  )
}

/** The platform says the window is closed (131047): the fallback goes at once, in this attempt. */
async function sendWithFallback(delivery: MessageDelivery, cleared: Cleared): Promise<Sent> {
  try {
    const { platformMessageId } = await callPlatform(delivery, cleared.message)
    return { kind: 'sent', platformMessageId, fallbackUsed: cleared.fallbackUsed }
  } catch (caught) {
    const fallback = cleared.fallbackUsed ? undefined : fallbackMessage(delivery.data)
    if (!fallback || !(caught instanceof PlatformError) || caught.code !== WINDOW_CLOSED_CODE) throw caught
    delivery.log.info('the platform found the 24-hour window closed; sending the fallback template')
    const { platformMessageId } = await callPlatform(delivery, fallback)
    return { kind: 'sent', platformMessageId, fallbackUsed: true }
  }
}

/** Step 4: the platform call; a failure answers what happens next (failed-send.ts). */
export function sendToPlatform(delivery: MessageDelivery, cleared: Cleared): Promise<Sent | Disposition> {
  return sendWithFallback(delivery, cleared).catch((caught) => failedSend(delivery, asPlatformError(caught)))
}
