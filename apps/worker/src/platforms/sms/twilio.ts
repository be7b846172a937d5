import { toStorableText } from '@dispatch/contracts'
import { smsPriceOf } from '@dispatch/runtime/sms'
import { classifySmsAnswer, classifySmsTransportFailure } from './classify.ts'
import { type SmsAccepted, type SmsProvider, SmsProviderError, type SmsSend } from './types.ts'

export interface TwilioOptions {
  apiUrl: string
  accountSid: string
  authToken: string
  /** The sending number or alphanumeric id; or a Messaging Service, which takes precedence. */
  from?: string | undefined
  messagingServiceSid?: string | undefined
  /** Where Twilio posts the SMS's status changes (`StatusCallback`); none without it. */
  statusCallbackUrl?: string | undefined
  timeoutMs: number
}

/** The answer as it may come: untrusted, so every field is checked before it is used or stored. */
interface TwilioAnswer {
  sid?: unknown
  status?: unknown
  code?: unknown
  message?: unknown
}

/**
 * Twilio's Messages API (`POST /2010-04-01/Accounts/{AccountSid}/Messages.json`, form-encoded,
 * basic auth with the account SID and auth token), or any provider speaking its shape.
 */
export function createTwilioSmsProvider(options: TwilioOptions): SmsProvider {
  const url = `${options.apiUrl.replace(/\/+$/, '')}/2010-04-01/Accounts/${encodeURIComponent(options.accountSid)}/Messages.json`
  const authorization = `Basic ${Buffer.from(`${options.accountSid}:${options.authToken}`).toString('base64')}`
  const messageUrl = (sid: string) => url.replace(/\.json$/, `/${encodeURIComponent(sid)}.json`)
  return {
    name: 'twilio',
    /**
     * The Message resource (`GET …/Messages/{Sid}.json`): its `price` (negative, the charge) and
     * `price_unit`, null until the provider has priced it. A refusal or an unreadable answer throws.
     */
    async price(providerMessageId: string) {
      const response = await fetch(messageUrl(providerMessageId), {
        headers: { authorization },
        signal: AbortSignal.timeout(options.timeoutMs),
      })
      if (!response.ok) {
        await response.body?.cancel()
        throw new Error(`The SMS provider answered ${response.status} for the SMS's record`)
      }
      const answer = (await response.json()) as { price?: unknown; price_unit?: unknown }
      // A string in Twilio's answers ("-0.00750"); a number from some providers of its shape.
      const price =
        typeof answer.price === 'string' || typeof answer.price === 'number' ? String(answer.price) : null
      const unit = typeof answer.price_unit === 'string' ? answer.price_unit : null
      return smsPriceOf(price, unit)
    },
    async send({ to, text }: SmsSend): Promise<SmsAccepted> {
      const form = new URLSearchParams({ To: to, Body: text })
      if (options.messagingServiceSid) form.set('MessagingServiceSid', options.messagingServiceSid)
      else if (options.from) form.set('From', options.from)
      if (options.statusCallbackUrl) form.set('StatusCallback', options.statusCallbackUrl)
      let response: Response
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
          body: form,
          signal: AbortSignal.timeout(options.timeoutMs),
        })
      } catch (error) {
        throw classifySmsTransportFailure(error)
      }
      let answer: TwilioAnswer = {}
      try {
        answer = (await response.json()) as TwilioAnswer
      } catch {
        // A body that is not JSON (a proxy's error page): the status decides.
      }
      if (!response.ok) {
        throw classifySmsAnswer(
          response.status,
          Number.isInteger(answer.code) ? (answer.code as number) : undefined,
          typeof answer.message === 'string' ? toStorableText(answer.message) : '',
          response.headers.get('retry-after'),
        )
      }
      const sid = typeof answer.sid === 'string' ? toStorableText(answer.sid) : ''
      if (!sid) {
        // It may well have been created: recorded unknown, never sent again.
        throw new SmsProviderError(
          'INVALID_ANSWER',
          'permanent',
          'The SMS provider answered 2xx without a sid',
          {
            outcomeKnown: false,
          },
        )
      }
      const status = typeof answer.status === 'string' ? toStorableText(answer.status) : 'queued'
      return { providerMessageId: sid, status }
    },
  }
}
