import { createHmac, timingSafeEqual } from 'node:crypto'
import Type from 'typebox'
import { ConfigError } from './env.ts'

export const SMS_PROVIDERS = ['twilio', 'sandbox'] as const
export type SmsProviderName = (typeof SMS_PROVIDERS)[number]

/**
 * The SMS provider of the channel fallback (docs/fallback.md, "The SMS provider"), as both apps
 * read it: the worker sends through it, the API verifies its signed status callbacks. Unset
 * SMS_PROVIDER: no SMS goes out, and a fallback the worker decides ends `failed`.
 */
export const smsEnv = {
  SMS_PROVIDER: Type.Optional(Type.Enum(SMS_PROVIDERS)),
  /** Twilio's Messages API; a fake's URL in tests. */
  SMS_API_URL: Type.String({ pattern: '^https?://', default: 'https://api.twilio.com' }),
  /** The account SID (`AC…`): the basic-auth user and the account in the URL. */
  SMS_ACCOUNT_SID: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9]+$' })),
  /** The auth token: the basic-auth password, and the key of `X-Twilio-Signature`. */
  SMS_AUTH_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  /** The number (E.164) or alphanumeric sender id SMS go out from… */
  SMS_FROM: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
  /** …or a Messaging Service (`MG…`) that picks it; takes precedence over SMS_FROM. */
  SMS_MESSAGING_SERVICE_SID: Type.Optional(Type.String({ pattern: '^MG[A-Za-z0-9]+$' })),
  /**
   * The public URL of `POST /api/webhooks/sms/status` as the provider calls it (scheme, host, path):
   * sent as each SMS's `StatusCallback` and the URL signatures are checked against. Unset: no
   * delivery reports are asked for.
   */
  SMS_STATUS_CALLBACK_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  SMS_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 10_000 }),
  /**
   * How often a `messages` worker asks the provider for the price of the SMS whose delivery ended
   * (its status callbacks carry none); an SMS whose price is not there yet is asked again after
   * twice as long each time, up to 64 times this (docs/fallback.md, "Prices").
   */
  SMS_PRICE_CHECK_MS: Type.Integer({ minimum: 100, default: 60_000 }),
}

/** The provider a configuration asks for; `twilio` without its credentials is an error. */
export function chooseSmsProvider(env: {
  SMS_PROVIDER?: SmsProviderName | undefined
  SMS_ACCOUNT_SID?: string | undefined
  SMS_AUTH_TOKEN?: string | undefined
  SMS_FROM?: string | undefined
  SMS_MESSAGING_SERVICE_SID?: string | undefined
}): SmsProviderName | undefined {
  if (env.SMS_PROVIDER !== 'twilio') return env.SMS_PROVIDER
  const missing = [
    env.SMS_ACCOUNT_SID ? undefined : 'SMS_ACCOUNT_SID',
    env.SMS_AUTH_TOKEN ? undefined : 'SMS_AUTH_TOKEN',
    env.SMS_FROM || env.SMS_MESSAGING_SERVICE_SID ? undefined : 'SMS_FROM or SMS_MESSAGING_SERVICE_SID',
  ].filter(Boolean)
  if (missing.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  SMS_PROVIDER: twilio needs ${missing.join(', ')}`)
  }
  return 'twilio'
}

/**
 * Twilio's request signature (`X-Twilio-Signature`): HMAC-SHA1, keyed with the auth token, of the
 * full URL followed by every POST parameter's name and value, sorted by name, without separators
 * or encoding; base64.
 */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  let data = url
  for (const name of Object.keys(params).sort()) data += name + params[name]
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64')
}

/** Whether a signature is the one Twilio would have sent for this URL and these parameters. */
export function isTwilioSignature(
  signature: string | undefined,
  authToken: string,
  url: string,
  params: Record<string, string>,
): boolean {
  if (!signature) return false
  const expected = Buffer.from(twilioSignature(authToken, url, params))
  const given = Buffer.from(signature)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/**
 * A price as a Twilio-shaped provider gives it (a report's `Price` and `PriceUnit`, or the Message
 * resource's `price` and `price_unit`; the charge is negative there): the amount charged, positive,
 * and its currency. Anything unreadable (or null, as the resource says for a while after the SMS
 * went) is left out, never refused.
 */
export function smsPriceOf(
  price: string | null | undefined,
  unit: string | null | undefined,
): { amount: string; currency: string } | undefined {
  if (!price || !unit || !/^-?[0-9]{1,7}(\.[0-9]{1,5})?$/.test(price) || !/^[A-Za-z]{3}$/.test(unit)) {
    return undefined
  }
  return { amount: price.replace(/^-/, ''), currency: unit.toUpperCase() }
}
