import { classifyPlatformAnswer, classifyTransportFailure } from './classify.ts'
import { cloudApiPayload } from './cloud-api-payload.ts'
import { type Delivered, type MessagingPlatform, PlatformError } from './types.ts'

export interface CloudApiOptions {
  apiUrl: string
  accessToken: string
  phoneNumberId: string
  timeoutMs: number
}

interface CloudApiAnswer {
  messages?: Array<{ id?: string }>
  error?: { code?: number; message?: string }
}

/** The WhatsApp Cloud API (Graph API `POST /{phone-number-id}/messages`, bearer token). */
export function createWhatsAppCloudPlatform(options: CloudApiOptions): MessagingPlatform {
  const url = `${options.apiUrl.replace(/\/+$/, '')}/${options.phoneNumberId}/messages`
  return {
    name: 'whatsapp-cloud',
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
        throw classifyPlatformAnswer(
          response.status,
          answer.error?.code,
          answer.error?.message ?? '',
          response.headers.get('retry-after'),
        )
      }
      const platformMessageId = answer.messages?.[0]?.id
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
