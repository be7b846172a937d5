import type { SmsProviderName } from '@dispatch/runtime/sms'
import { createSandboxSmsProvider } from './sandbox.ts'
import { createTwilioSmsProvider } from './twilio.ts'
import type { SmsProvider } from './types.ts'

/** The SMS provider the configuration names (`SMS_PROVIDER`), or none. */
export function createSmsProvider(config: {
  smsProvider: SmsProviderName | undefined
  SMS_API_URL: string
  SMS_ACCOUNT_SID?: string | undefined
  SMS_AUTH_TOKEN?: string | undefined
  SMS_FROM?: string | undefined
  SMS_MESSAGING_SERVICE_SID?: string | undefined
  SMS_STATUS_CALLBACK_URL?: string | undefined
  SMS_TIMEOUT_MS: number
}): SmsProvider | undefined {
  if (config.smsProvider === 'sandbox') return createSandboxSmsProvider()
  if (config.smsProvider !== 'twilio') return undefined
  // chooseSmsProvider has checked the credentials are there.
  return createTwilioSmsProvider({
    apiUrl: config.SMS_API_URL,
    accountSid: config.SMS_ACCOUNT_SID as string,
    authToken: config.SMS_AUTH_TOKEN as string,
    from: config.SMS_FROM,
    messagingServiceSid: config.SMS_MESSAGING_SERVICE_SID,
    statusCallbackUrl: config.SMS_STATUS_CALLBACK_URL,
    timeoutMs: config.SMS_TIMEOUT_MS,
  })
}
