import { describe, expect, it } from 'vitest'
import { parseWorkerConfig } from './env.ts'

describe('worker configuration', () => {
  it('delivers for every sender by default, or for the ones WORKER_SENDERS names', () => {
    expect(parseWorkerConfig({}).workerSenders).toBe('*')
    expect(parseWorkerConfig({ WORKER_SENDERS: 'default,3f1c,3f1c' }).workerSenders).toEqual([
      'default',
      '3f1c',
    ])
    expect(() => parseWorkerConfig({ WORKER_SENDERS: 'default, other' })).toThrow(/WORKER_SENDERS/)
    expect(() => parseWorkerConfig({ WORKER_SENDERS: '*,default' })).toThrow(/WORKER_SENDERS/)
  })

  it('requires a 32-byte SECRETS_KEY in production, to open senders’ tokens', () => {
    expect(() => parseWorkerConfig({ APP_ENV: 'production' })).toThrow(/SECRETS_KEY: required in production/)
    expect(() => parseWorkerConfig({ SECRETS_KEY: 'c2hvcnQ=' })).toThrow(/SECRETS_KEY: must be 32 bytes/)
    const key = Buffer.alloc(32, 1).toString('base64')
    const hashKey = 'a-production-erasure-hash-key-0123456789'
    expect(
      parseWorkerConfig({ APP_ENV: 'production', SECRETS_KEY: key, ERASURE_HASH_KEY: hashKey }).SECRETS_KEY,
    ).toBe(key)
  })

  it('refuses in production the development keys from the repository, or none, naming each', () => {
    const devSecretsKey = 'ZGlzcGF0Y2gtZGV2ZWxvcG1lbnQtb25seS1rZXkhISE='
    const devHashKey = 'dispatch-development-only-erasure-hash-key'
    const attempt = () =>
      parseWorkerConfig({ APP_ENV: 'production', SECRETS_KEY: devSecretsKey, ERASURE_HASH_KEY: devHashKey })
    expect(attempt).toThrow(/SECRETS_KEY: is the development key/)
    expect(attempt).toThrow(/ERASURE_HASH_KEY: is the development key/)
    expect(attempt).not.toThrow(new RegExp(devSecretsKey))
    expect(attempt).not.toThrow(new RegExp(devHashKey))
    expect(() =>
      parseWorkerConfig({ APP_ENV: 'production', SECRETS_KEY: Buffer.alloc(32, 1).toString('base64') }),
    ).toThrow(/ERASURE_HASH_KEY: required in production/)
    // Development runs on them, with nothing to set; a production key may rotate the old one out.
    expect(parseWorkerConfig({ SECRETS_KEY: devSecretsKey, ERASURE_HASH_KEY: devHashKey }).APP_ENV).toBe(
      'development',
    )
  })

  it('takes admission settings within bounds', () => {
    expect(parseWorkerConfig({})).toMatchObject({ ADMISSION_INTERVAL_MS: 50, SENDER_QUEUE_WINDOW_MS: 500 })
    expect(() => parseWorkerConfig({ ADMISSION_INTERVAL_MS: '0' })).toThrow(/ADMISSION_INTERVAL_MS/)
    expect(() => parseWorkerConfig({ SENDER_QUEUE_WINDOW_MS: '10' })).toThrow(/SENDER_QUEUE_WINDOW_MS/)
  })

  it('keeps /metrics up after shutdown only when asked, within bounds', () => {
    expect(parseWorkerConfig({}).METRICS_SHUTDOWN_LINGER_MS).toBe(0)
    expect(parseWorkerConfig({ METRICS_SHUTDOWN_LINGER_MS: '15000' }).METRICS_SHUTDOWN_LINGER_MS).toBe(15_000)
    expect(() => parseWorkerConfig({ METRICS_SHUTDOWN_LINGER_MS: '-1' })).toThrow(
      /METRICS_SHUTDOWN_LINGER_MS/,
    )
    expect(() => parseWorkerConfig({ METRICS_SHUTDOWN_LINGER_MS: '600000' })).toThrow(
      /METRICS_SHUTDOWN_LINGER_MS/,
    )
  })

  it('sends SMS only through a provider it was given, with its credentials', () => {
    expect(parseWorkerConfig({}).smsProvider).toBeUndefined()
    expect(parseWorkerConfig({ SMS_PROVIDER: 'sandbox' }).smsProvider).toBe('sandbox')
    expect(() => parseWorkerConfig({ SMS_PROVIDER: 'twilio', SMS_ACCOUNT_SID: 'AC1' })).toThrow(
      /SMS_PROVIDER: twilio needs SMS_AUTH_TOKEN, SMS_FROM or SMS_MESSAGING_SERVICE_SID/,
    )
    const twilio = {
      SMS_PROVIDER: 'twilio',
      SMS_ACCOUNT_SID: 'AC1',
      SMS_AUTH_TOKEN: 't',
      SMS_FROM: '+15005550006',
    }
    expect(parseWorkerConfig(twilio)).toMatchObject({
      smsProvider: 'twilio',
      SMS_API_URL: 'https://api.twilio.com',
    })
    expect(() => parseWorkerConfig({ SMS_PROVIDER: 'nexmo' })).toThrow(/SMS_PROVIDER/)
  })
})
