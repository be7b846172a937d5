import { randomUUID } from 'node:crypto'
import type { SmsAccepted, SmsProvider } from './types.ts'

/** Sends to nowhere: every SMS is taken (`queued`) with a generated sid, for local runs. */
export function createSandboxSmsProvider(): SmsProvider {
  return {
    name: 'sandbox',
    async send(): Promise<SmsAccepted> {
      return { providerMessageId: `SMsandbox${randomUUID().replaceAll('-', '')}`, status: 'queued' }
    },
  }
}
