import { describe, expect, it } from 'vitest'
import { DEVELOPMENT_ADMIN_TOKEN, parseApiConfig } from './env.ts'
import { mediaHostsOf } from './media/cloud-api-media.ts'

/** A well-formed key, as production needs one. */
const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64')
/** What production needs besides ADMIN_TOKENS and SECRETS_KEY. */
const ERASURE_HASH_KEY = 'a-production-erasure-hash-key-0123456789'
const METRICS_TOKEN = 'metrics-token-0123456789abcdef'
/** The committed development values, which production refuses. */
const DEV_SECRETS_KEY = 'ZGlzcGF0Y2gtZGV2ZWxvcG1lbnQtb25seS1rZXkhISE='
const DEV_HASH_KEY = 'dispatch-development-only-erasure-hash-key'

describe('API configuration', () => {
  it('has defaults that run against local Postgres and Redis in development', () => {
    const config = parseApiConfig({})
    expect(config).toMatchObject({
      APP_ENV: 'development',
      PORT: 3000,
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/dispatch',
      REDIS_URL: 'redis://127.0.0.1:6379',
      usingDevAdminToken: true,
    })
    expect(config.adminTokens).toEqual([{ name: 'dev-admin', token: DEVELOPMENT_ADMIN_TOKEN }])
  })

  it("takes TRUST_PROXY as the proxies' addresses or CIDRs; or a hop count; refuses true, saying why", () => {
    for (const off of [undefined, '', 'false', '0']) {
      expect(parseApiConfig({ APP_ENV: 'development', TRUST_PROXY: off }).TRUST_PROXY).toBe(false)
    }
    expect(
      parseApiConfig({ APP_ENV: 'development', TRUST_PROXY: '10.0.0.0/8, 192.168.1.7,fc00::/7,loopback' })
        .TRUST_PROXY,
    ).toEqual(['10.0.0.0/8', '192.168.1.7', 'fc00::/7', 'loopback'])
    expect(() => parseApiConfig({ APP_ENV: 'development', TRUST_PROXY: 'true' })).toThrow(
      /TRUST_PROXY: true would believe/,
    )
    // A hop count: the peer and the next N - 1 entries from the right are proxies, the one after is the client.
    const hops = parseApiConfig({ APP_ENV: 'development', TRUST_PROXY: '2' }).TRUST_PROXY as (
      a: string,
      i: number,
    ) => boolean
    expect([0, 1, 2].map((hop) => hops('10.0.0.1', hop))).toEqual([true, true, false])
    expect(() => parseApiConfig({ APP_ENV: 'development', TRUST_PROXY: '10.0.0.0/33,proxy.local' })).toThrow(
      /"10\.0\.0\.0\/33", "proxy\.local" is not/,
    )
  })

  it("fetches inbound media from Meta's host only in production, this machine too in development, or as told", () => {
    // (The production default read directly: production's other requirements are not this test's.)
    expect([...mediaHostsOf({ APP_ENV: 'production' })]).toEqual(['lookaside.fbsbx.com'])
    expect([...mediaHostsOf(parseApiConfig({ APP_ENV: 'development' }))]).toEqual([
      'lookaside.fbsbx.com',
      'localhost',
      '127.0.0.1',
      '::1',
    ])
    expect([
      ...mediaHostsOf(
        parseApiConfig({ APP_ENV: 'development', WHATSAPP_MEDIA_HOSTS: 'Media.Example,[::1]' }),
      ),
    ]).toEqual(['media.example', '::1'])
    expect(() => parseApiConfig({ APP_ENV: 'development', WHATSAPP_MEDIA_HOSTS: 'https://x/' })).toThrow(
      /WHATSAPP_MEDIA_HOSTS/,
    )
  })

  it('names every bad variable at once, without echoing secrets', () => {
    const attempt = () =>
      parseApiConfig({ PORT: 'eighty', APP_ENV: 'staging', REDIS_URL: 'http://x', ADMIN_TOKENS: 'ana=short' })
    expect(attempt).toThrow(/PORT/)
    expect(attempt).toThrow(/APP_ENV/)
    expect(attempt).toThrow(/REDIS_URL/)
    expect(attempt).toThrow(/ADMIN_TOKENS/)
    expect(attempt).not.toThrow(/ana=short/)
  })

  it('requires a 32-byte SECRETS_KEY in production, naming it; development has its own', () => {
    const prod = {
      APP_ENV: 'production',
      ADMIN_TOKENS: 'ana=0123456789abcdef0123',
      ERASURE_HASH_KEY,
      METRICS_TOKEN,
    }
    expect(() => parseApiConfig(prod)).toThrow(/SECRETS_KEY: required in production/)
    expect(() => parseApiConfig({ ...prod, SECRETS_KEY: 'c2hvcnQ=' })).toThrow(
      /SECRETS_KEY: must be 32 bytes/,
    )
    expect(() => parseApiConfig({ SECRETS_KEY_PREVIOUS: 'c2hvcnQ=' })).toThrow(
      /SECRETS_KEY_PREVIOUS: must be 32 bytes/,
    )
    expect(parseApiConfig({ ...prod, SECRETS_KEY }).APP_ENV).toBe('production')
    expect(parseApiConfig({}).SECRETS_KEY).toBeUndefined()
  })

  it('requires ADMIN_TOKENS in production and parses named pairs', () => {
    expect(() => parseApiConfig({ APP_ENV: 'production' })).toThrow(/ADMIN_TOKENS: required in production/)
    const config = parseApiConfig({
      APP_ENV: 'production',
      ADMIN_TOKENS: 'ana=0123456789abcdef0123,ops=fedcba9876543210fedc=x',
      SECRETS_KEY,
      ERASURE_HASH_KEY,
      METRICS_TOKEN,
    })
    expect(config.adminTokens).toEqual([
      { name: 'ana', token: '0123456789abcdef0123' },
      { name: 'ops', token: 'fedcba9876543210fedc=x' },
    ])
    expect(config.usingDevAdminToken).toBe(false)
  })

  it('refuses in production the development admin token and keys, and an open /metrics on PORT, naming each at once', () => {
    const attempt = () =>
      parseApiConfig({
        APP_ENV: 'production',
        ADMIN_TOKENS: `ana=0123456789abcdef0123,dev-admin=${DEVELOPMENT_ADMIN_TOKEN}`,
        SECRETS_KEY: DEV_SECRETS_KEY,
        ERASURE_HASH_KEY: DEV_HASH_KEY,
      })
    expect(attempt).toThrow(/ADMIN_TOKENS: dev-admin has the development token/)
    expect(attempt).toThrow(/SECRETS_KEY: is the development key/)
    expect(attempt).toThrow(/ERASURE_HASH_KEY: is the development key/)
    expect(attempt).toThrow(/METRICS_TOKEN: required in production while \/metrics is on PORT/)
    for (const secret of [DEVELOPMENT_ADMIN_TOKEN, DEV_SECRETS_KEY, DEV_HASH_KEY, '0123456789abcdef0123']) {
      expect(attempt).not.toThrow(secret)
    }
    expect(() => parseApiConfig({ APP_ENV: 'production' })).toThrow(
      /ERASURE_HASH_KEY: required in production/,
    )

    // Unset, ADMIN_TOKENS is said to be missing, not to hold the development token.
    expect(() => parseApiConfig({ APP_ENV: 'production' })).toThrow(/ADMIN_TOKENS: required in production/)
    expect(() => parseApiConfig({ APP_ENV: 'production' })).not.toThrow(/development token/)

    const prod = {
      APP_ENV: 'production',
      ADMIN_TOKENS: 'ana=0123456789abcdef0123',
      SECRETS_KEY,
      ERASURE_HASH_KEY,
    }
    // /metrics with a token, on a listener of its own, or not at all.
    expect(parseApiConfig({ ...prod, METRICS_TOKEN }).METRICS_TOKEN).toBe(METRICS_TOKEN)
    expect(parseApiConfig({ ...prod, METRICS_PORT: '9464' })).toMatchObject({
      METRICS_PORT: 9464,
      METRICS_HOST: '127.0.0.1',
    })
    expect(parseApiConfig({ ...prod, METRICS_ENABLED: 'false' }).METRICS_ENABLED).toBe(false)
    // Development keeps its conveniences.
    expect(parseApiConfig({}).METRICS_TOKEN).toBeUndefined()
  })

  it('allows private webhook targets by default in development only, and either way when told', () => {
    const prod = {
      APP_ENV: 'production',
      ADMIN_TOKENS: 'ana=0123456789abcdef0123',
      SECRETS_KEY,
      ERASURE_HASH_KEY,
      METRICS_TOKEN,
    }
    expect(parseApiConfig({}).WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(true)
    expect(parseApiConfig(prod).WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(false)
    expect(
      parseApiConfig({ ...prod, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }).WEBHOOK_ALLOW_PRIVATE_TARGETS,
    ).toBe(true)
    expect(parseApiConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' }).WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(
      false,
    )
    expect(() => parseApiConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'maybe' })).toThrow(
      /WEBHOOK_ALLOW_PRIVATE_TARGETS/,
    )
  })

  it('uploads media to the sandbox unless the Cloud API is configured, as the worker sends', () => {
    const cloud = { WHATSAPP_ACCESS_TOKEN: 'EAAG-token', WHATSAPP_PHONE_NUMBER_ID: '106540352242922' }
    expect(parseApiConfig({})).toMatchObject({ platform: 'sandbox', MEDIA_MAX_BYTES: 100 * 1024 * 1024 })
    expect(parseApiConfig(cloud).platform).toBe('whatsapp-cloud')
    expect(parseApiConfig({ ...cloud, PLATFORM: 'sandbox' }).platform).toBe('sandbox')
    expect(() => parseApiConfig({ PLATFORM: 'whatsapp-cloud' })).toThrow(/PLATFORM: whatsapp-cloud needs/)
    expect(() => parseApiConfig({ MEDIA_MAX_BYTES: '10' })).toThrow(/MEDIA_MAX_BYTES/)
  })
})
