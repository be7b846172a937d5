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
    expect(parseWorkerConfig({ APP_ENV: 'production', SECRETS_KEY: key }).SECRETS_KEY).toBe(key)
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
})
