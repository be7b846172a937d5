import { existsSync } from 'node:fs'
import { DEMO_WABA_ID } from './whatsapp-templates.ts'

/** Where the tests find Postgres and Redis: the environment first, then Docker, then the local defaults. */
export const testEnv = {
  databaseUrl: process.env.DATABASE_URL,
  redisUrl: process.env.REDIS_URL,
  dockerAvailable: Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock'),
}

export const LOCAL_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres'
export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379'

/** `pnpm fake:whatsapp`: its port, and where (and whether: with the app secret) it plays Meta's webhooks. */
export const fakeWhatsAppEnv = () => ({
  port: Number(process.env.FAKE_WHATSAPP_PORT ?? 4010),
  webhookUrl: process.env.FAKE_WEBHOOK_URL ?? 'http://127.0.0.1:3000/api/webhooks/whatsapp',
  appSecret: process.env.WHATSAPP_APP_SECRET,
  /** The business number the fake plays, as the worker's WHATSAPP_PHONE_NUMBER_ID must say. */
  phoneNumberId: process.env.WHATSAPP_PHONE_NUMBER_ID ?? '106540352242922',
  /** The WhatsApp Business Account that number belongs to, with the demo templates. */
  wabaId: process.env.FAKE_WABA_ID ?? DEMO_WABA_ID,
  /** FAKE_UNDELIVERABLE: recipients (comma-separated, digits or E.164) not on WhatsApp, as digits. */
  undeliverable: (process.env.FAKE_UNDELIVERABLE ?? '')
    .split(',')
    .map((phone) => phone.trim().replace(/^\+/, ''))
    .filter((phone) => phone !== ''),
})

/** `pnpm fake:sms`: its port, and the account it takes SMS for (the service's; demo values by default). */
export const fakeSmsEnv = () => ({
  port: Number(process.env.FAKE_SMS_PORT ?? 4030),
  accountSid: process.env.SMS_ACCOUNT_SID ?? 'ACfake0000000000000000000000000000',
  authToken: process.env.SMS_AUTH_TOKEN ?? 'fake-sms-auth-token',
  /** What its record of each SMS says it cost (Twilio's sign: negative). */
  price: process.env.FAKE_SMS_PRICE ?? '-0.00750',
  priceUnit: process.env.FAKE_SMS_PRICE_UNIT ?? 'USD',
})

/** `pnpm webhook:receiver`: its port, and the endpoint's signing secret (unset: nothing checked). */
export const webhookReceiverEnv = () => ({
  port: Number(process.env.RECEIVER_PORT ?? 4020),
  secret: process.env.WEBHOOK_SECRET,
})

/**
 * What a child process of the tests starts from: this process's whole environment, or only PATH
 * and HOME, so that a test sets everything else the service reads.
 */
export const childProcessEnv = (inherit: boolean): NodeJS.ProcessEnv =>
  inherit ? process.env : { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }
