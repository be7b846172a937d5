import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MEDIA_MAX_BYTES } from '@dispatch/contracts'
import {
  commonEnv,
  exitOnConfigError,
  type PlatformName,
  parseEnv,
  poolEnv,
  throwConfigProblems,
} from '@dispatch/runtime/env'
import { serviceEnv, serviceKeyChecks, serviceSettings } from '@dispatch/runtime/service-env'
import { tracingEnv } from '@dispatch/runtime/tracing'
import Type, { type Static } from 'typebox'
import { parseTrustProxy, type TrustProxy } from './trust-proxy.ts'

const ApiEnv = Type.Object({
  ...commonEnv,
  ...poolEnv,
  HOST: Type.String({ default: '127.0.0.1' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  ADMIN_TOKENS: Type.Optional(
    Type.String({ pattern: '^[A-Za-z0-9_.-]+=[^,\\s]{16,}(,[A-Za-z0-9_.-]+=[^,\\s]{16,})*$' }),
  ),
  /** Which proxies' X-Forwarded-For to believe: a hop count or their addresses/CIDRs (trust-proxy.ts). */
  TRUST_PROXY: Type.Optional(Type.String()),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 65536 }),
  /** The body limit of `POST /messages/batch` (up to 1,000 messages). */
  BATCH_BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 2 * 1024 * 1024 }),
  KEY_REQUEST_RATE_MAX: Type.Integer({ minimum: 1, default: 20 }),
  KEY_REQUEST_RATE_WINDOW_MS: Type.Integer({ minimum: 1000, default: 3_600_000 }),
  /** Failed admin authentications allowed per client address per window, across every API instance. */
  ADMIN_AUTH_FAILURE_MAX: Type.Integer({ minimum: 1, default: 20 }),
  ADMIN_AUTH_FAILURE_WINDOW_MS: Type.Integer({ minimum: 1000, default: 60_000 }),
  /** Invalid API keys allowed per client address per window, across every API instance. */
  API_KEY_FAILURE_MAX: Type.Integer({ minimum: 1, default: 60 }),
  API_KEY_FAILURE_WINDOW_MS: Type.Integer({ minimum: 1000, default: 60_000 }),
  API_KEY_CACHE_TTL_MS: Type.Integer({ minimum: 0, default: 30_000 }),
  API_KEY_CACHE_MAX: Type.Integer({ minimum: 1, default: 10_000 }),
  /** How long past its TTL a cached key still answers while Postgres cannot be reached. */
  API_KEY_STALE_IF_ERROR_MS: Type.Integer({ minimum: 0, default: 300_000 }),
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, default: 10_000 }),
  /** How long a console or portal session lasts from its sign-in at most (no sliding renewal). */
  CONSOLE_SESSION_TTL_MS: Type.Integer({ minimum: 60_000, default: 8 * 3_600_000 }),
  /** A console or portal session unused this long ends, before its lifetime if need be. */
  CONSOLE_SESSION_IDLE_MS: Type.Integer({ minimum: 60_000, default: 30 * 60_000 }),
  /** Where the console's built pages are (`pnpm --filter @dispatch/console build`). */
  CONSOLE_DIST_DIR: Type.Optional(Type.String({ minLength: 1 })),
  /** Send requests per second per API key, across every API instance. */
  MESSAGE_RATE_PER_SECOND: Type.Integer({ minimum: 1, default: 100 }),
  /** How long a message may wait to be handed to the platform, unless its send says otherwise. */
  MESSAGE_VALIDITY_SECONDS: Type.Integer({ minimum: 1, maximum: 86_400, default: 14_400 }),
  /** The shortest `validitySeconds` a send may ask (lowered in tests). */
  MESSAGE_VALIDITY_MIN_SECONDS: Type.Integer({ minimum: 1, maximum: 86_400, default: 60 }),
  /** How far ahead a `sendAt` must be at least (lowered in tests); at most 35 days. */
  SCHEDULE_MIN_AHEAD_SECONDS: Type.Integer({ minimum: 0, maximum: 86_400, default: 60 }),
  /** How long an Idempotency-Key is remembered. */
  IDEMPOTENCY_TTL_SECONDS: Type.Integer({ minimum: 60, default: 24 * 3600 }),
  /** A key's most messages waiting on its sender, queued and scheduled (Redis runs `noeviction`). */
  MESSAGE_OUTSTANDING_MAX: Type.Integer({ minimum: 1, default: 100_000 }),
  /** A key's most webhook endpoints. */
  WEBHOOK_ENDPOINTS_PER_KEY_MAX: Type.Integer({ minimum: 1, default: 20 }),
  /** How far back a replay's `since` may reach. */
  WEBHOOK_REPLAY_WINDOW_HOURS: Type.Integer({ minimum: 1, default: 7 * 24 }),
  /** A key's replays running at once, across its endpoints. */
  WEBHOOK_REPLAYS_PER_KEY_MAX: Type.Integer({ minimum: 1, default: 2 }),
  /** Manual retries of deliveries per endpoint per hour. */
  WEBHOOK_MANUAL_RETRIES_PER_HOUR: Type.Integer({ minimum: 1, default: 100 }),
  /** The platform webhook: the token Meta echoes in the subscription handshake, and the app secret
   * that signs each delivery (X-Hub-Signature-256). Without the secret, deliveries are refused. */
  WHATSAPP_VERIFY_TOKEN: Type.Optional(Type.String({ minLength: 8 })),
  WHATSAPP_APP_SECRET: Type.Optional(Type.String({ minLength: 8 })),
  /**
   * The hosts an inbound media's url may name (comma-separated), the only ones sent the number's
   * token: Meta's `lookaside.fbsbx.com` by default, and outside production also this machine
   * (`localhost`, `127.0.0.1`, `::1`: the fake Cloud API). See media/cloud-api-media.ts.
   */
  WHATSAPP_MEDIA_HOSTS: Type.Optional(
    Type.String({ pattern: '^[A-Za-z0-9.:\\[\\]-]+(,[A-Za-z0-9.:\\[\\]-]+)*$' }),
  ),
  /** The platform media uploads go to (the worker's, by the same variables), the keys, metrics. */
  ...serviceEnv,
  /**
   * Unset: `/metrics` is served on PORT with the API. Set: on a listener of its own at
   * METRICS_HOST:METRICS_PORT (0: any free port, logged), and not on PORT, so it can stay off the
   * public network. Production needs METRICS_TOKEN unless this is set.
   */
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  ...tracingEnv,
  /**
   * The largest file `POST /api/third-party/media` takes, of any kind: each kind has its own, lower
   * limit too (images 5 MiB, video and audio 16 MiB, documents 100 MiB, stickers 100/500 KiB).
   */
  MEDIA_MAX_BYTES: Type.Integer({ minimum: 1024, maximum: MEDIA_MAX_BYTES, default: MEDIA_MAX_BYTES }),
  /**
   * How long the Cloud API may go without progress on an upload or a download (connecting, taking
   * the next bytes, answering once the file is through).
   */
  MEDIA_UPLOAD_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 30_000 }),
  /**
   * With the sandbox: where uploaded video, audio and documents are kept, one file per mediaId
   * (images and stickers stay in Postgres). Default: `dispatch-media` under the OS temp dir.
   */
  MEDIA_DIR: Type.String({ minLength: 1, default: join(tmpdir(), 'dispatch-media') }),
  /**
   * How often each API instance compares its copy of every sender's templates and window policy
   * with Postgres, in case a change announcement (Redis pub/sub, applied at once) was missed.
   */
  TEMPLATE_CACHE_REFRESH_MS: Type.Integer({ minimum: 100, default: 30_000 }),
  /**
   * Who is e-mailed when Meta reports a sender's account banned, restricted or deleted (sends will
   * fail). Unset: an `error` log line only. The workers' setting of the same name covers refused tokens.
   */
  ADMIN_ALERT_EMAIL: Type.Optional(Type.String({ minLength: 3, maxLength: 254 })),
  /** Per Graph API request of an admin's template sync. */
  TEMPLATE_SYNC_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 10_000 }),
  /** Where the BME copy of `order.created` goes, for channels with `sendBMEEmail`. */
  BME_EMAIL: Type.String({ pattern: '^[^@\\s]+@[^@\\s]+$', default: 'bme@dispatch.local' }),
  /** Whether webhook endpoints may point at loopback, private or link-local addresses. Unset: true
   * in development (a receiver on your machine), false in production (no SSRF into the network). */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: Type.Optional(Type.Boolean()),
  /** Whether this instance feeds running campaigns (docs/campaigns.md); one instance feeds each at a time. */
  CAMPAIGN_FEED: Type.Boolean({ default: true }),
  /** A campaign's recipients waiting for admission in Redis, at most (fed a window at a time). */
  CAMPAIGN_WINDOW: Type.Integer({ minimum: 10, maximum: 10_000, default: 1000 }),
  /** How often the feeder looks for campaigns to feed (every 25 ms for this long after a turn that fed one). */
  CAMPAIGN_FEED_INTERVAL_MS: Type.Integer({ minimum: 10, default: 500 }),
  /**
   * At most one `campaign.progress` event per campaign this often, and no sooner than 20× its last
   * count's duration (a million recipients: about every 20 s); the completion is checked as often.
   */
  CAMPAIGN_PROGRESS_SECONDS: Type.Integer({ minimum: 1, default: 5 }),
})
type ApiEnv = Static<typeof ApiEnv>

/** Used only in development when ADMIN_TOKENS is unset, so the README's curl lines work as given. */
export const DEVELOPMENT_ADMIN_TOKEN = 'dev-admin-token-change-me'

export interface AdminToken {
  name: string
  token: string
}

export type ApiConfig = Omit<
  ApiEnv,
  'ADMIN_TOKENS' | 'WEBHOOK_ALLOW_PRIVATE_TARGETS' | 'PLATFORM' | 'TRUST_PROXY'
> & {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: boolean
  TRUST_PROXY: TrustProxy
  platform: PlatformName
  adminTokens: AdminToken[]
  usingDevAdminToken: boolean
}

/**
 * What production refuses to start with, each named: the admin token from the README, no metrics
 * token while `/metrics` is on the public port. The secrets' keys are checked beside it.
 */
function productionProblems(env: ApiEnv, adminTokens: AdminToken[]): string[] {
  if (env.APP_ENV !== 'production') return []
  const problems: string[] = []
  if (!env.ADMIN_TOKENS) {
    problems.push('  ADMIN_TOKENS: required in production (name=token pairs, comma-separated)')
  }
  const given = env.ADMIN_TOKENS ? adminTokens : []
  for (const { name } of given.filter(({ token }) => token === DEVELOPMENT_ADMIN_TOKEN)) {
    problems.push(`  ADMIN_TOKENS: ${name} has the development token from the README; give it its own`)
  }
  if (env.METRICS_ENABLED && !env.METRICS_TOKEN && env.METRICS_PORT === undefined) {
    problems.push(
      '  METRICS_TOKEN: required in production while /metrics is on PORT; or set METRICS_PORT to serve it on a listener of its own',
    )
  }
  return problems
}

function toConfig(env: ApiEnv): ApiConfig {
  const { ADMIN_TOKENS, PLATFORM, ...rest } = env
  const adminTokens = ADMIN_TOKENS
    ? ADMIN_TOKENS.split(',').map((pair) => {
        const at = pair.indexOf('=')
        return { name: pair.slice(0, at), token: pair.slice(at + 1) }
      })
    : [{ name: 'dev-admin', token: DEVELOPMENT_ADMIN_TOKEN }]
  // Sender tokens are sealed under SECRETS_KEY, checked with the other keys (serviceKeyChecks).
  throwConfigProblems([() => productionProblems(env, adminTokens), ...serviceKeyChecks(env)])
  const { platform, WEBHOOK_ALLOW_PRIVATE_TARGETS } = serviceSettings({ ...rest, PLATFORM })
  return {
    ...rest,
    WEBHOOK_ALLOW_PRIVATE_TARGETS,
    TRUST_PROXY: parseTrustProxy(env.TRUST_PROXY),
    platform,
    adminTokens,
    usingDevAdminToken: !ADMIN_TOKENS,
  }
}

/** Parses an environment record; throws naming each bad variable. Tests call this with their own. */
export const parseApiConfig = (source: Record<string, string | undefined>) =>
  toConfig(parseEnv(ApiEnv, source))

/** The process's configuration, or a message naming each bad variable and exit 1. */
export const loadApiConfig = (): ApiConfig => exitOnConfigError(() => parseApiConfig(process.env))
