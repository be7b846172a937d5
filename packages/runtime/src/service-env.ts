import { choosePlatform, type PlatformName, platformEnv } from './env.ts'
import { metricsEnv } from './metrics.ts'
import { erasureHashKeyProblems, recipientHashEnv } from './recipient-hash.ts'
import { createSecretBox, secretsEnv, secretsKeyProblems } from './secrets.ts'
import { chooseSmsProvider, type SmsProviderName, smsEnv } from './sms.ts'

/**
 * The env base the API and the worker share beside `commonEnv` (env.ts): the messaging platform,
 * the SMS provider of the channel fallback, the keys that seal secrets and hash recipients, and
 * metrics. Each app's env.ts spreads it into its
 * own schema and adds only its own variables.
 */
export const serviceEnv = {
  ...platformEnv,
  ...smsEnv,
  ...secretsEnv,
  ...recipientHashEnv,
  ...metricsEnv,
}

interface ServiceKeys {
  APP_ENV: string
  SECRETS_KEY?: string | undefined
  SECRETS_KEY_PREVIOUS?: string | undefined
  ERASURE_HASH_KEY?: string | undefined
}

/**
 * The checks of `serviceEnv`'s keys, for `throwConfigProblems`: production refuses the development
 * keys from the repository, or none; and SECRETS_KEY must open what it sealed (32 bytes), checked
 * at boot so a bad one stops the process with the others' message, not at the first request.
 */
export const serviceKeyChecks = (env: ServiceKeys) => [
  () => secretsKeyProblems(env),
  () => erasureHashKeyProblems(env),
  () => void createSecretBox(env),
]

/**
 * What both apps derive from `serviceEnv` the same way: the platform in use, the SMS provider (if
 * any), and whether webhook endpoints may point at private addresses (unset: in development yes, in
 * production no).
 */
export const serviceSettings = (env: {
  APP_ENV: string
  PLATFORM?: PlatformName | undefined
  WHATSAPP_ACCESS_TOKEN?: string | undefined
  WHATSAPP_PHONE_NUMBER_ID?: string | undefined
  WEBHOOK_ALLOW_PRIVATE_TARGETS?: boolean | undefined
  SMS_PROVIDER?: SmsProviderName | undefined
  SMS_ACCOUNT_SID?: string | undefined
  SMS_AUTH_TOKEN?: string | undefined
  SMS_FROM?: string | undefined
  SMS_MESSAGING_SERVICE_SID?: string | undefined
}) => ({
  platform: choosePlatform(env),
  smsProvider: chooseSmsProvider(env),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: env.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? env.APP_ENV !== 'production',
})
