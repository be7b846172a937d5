import { toStorableText } from '@dispatch/contracts'
import { classifyPlatformAnswer, classifyTransportFailure } from './classify.ts'
import { cloudApiPayload } from './cloud-api-payload.ts'
import { type Delivered, type MessagingPlatform, PlatformError } from './types.ts'

export interface CloudApiOptions {
  apiUrl: string
  accessToken: string
  phoneNumberId: string
  timeoutMs: number
}

/** The answer as it may come: untrusted, so every field is checked before it is used or stored. */
interface CloudApiAnswer {
  messages?: Array<{ id?: unknown }>
  error?: { code?: unknown; message?: unknown }
}

/** The WhatsApp Cloud API (Graph API `POST /{phone-number-id}/messages`, bearer token). */
export function createWhatsAppCloudPlatform(options: CloudApiOptions): MessagingPlatform {
  const url = `${options.apiUrl.replace(/\/+$/, '')}/${options.phoneNumberId}/messages`
  return {
    name: 'whatsapp-cloud',
    phoneNumberId: options.phoneNumberId,
    async deliver({ messageId, message }): Promise<Delivered> {
      let response: Response
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${options.accessToken}`, 'content-type': 'application/json' },
          body: JSON.stringify(cloudApiPayload(messageId, message)),
          signal: AbortSignal.timeout(options.timeoutMs),
        })
      } catch (error) {
        throw classifyTransportFailure(error)
      }
      let answer: CloudApiAnswer = {}
      try {
        answer = (await response.json()) as CloudApiAnswer
      } catch {
        // A body that is not JSON (a proxy's error page): the status decides.
      }
      if (!response.ok) {
        const { code, message } = answer.error ?? {}
        throw classifyPlatformAnswer(
          response.status,
          Number.isInteger(code) ? (code as number) : undefined,
          typeof message === 'string' ? toStorableText(message) : '',
          response.headers.get('retry-after'),
        )
      }
      const id = answer.messages?.[0]?.id
      const platformMessageId = typeof id === 'string' ? toStorableText(id) : undefined
      if (!platformMessageId) {
        // It may well have been sent: failing is better than sending it twice.
        throw new PlatformError(
          'INVALID_ANSWER',
          'permanent',
          'The platform answered 2xx without a message id',
        )
      }
      return { platformMessageId }
    },
  }
}
