import { APP_ENVS } from '@dispatch/contracts'
import Type, { type Static, type TObject } from 'typebox'
import Value from 'typebox/value'
import { LOG_FORMATS } from './logging.ts'

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/**
 * Parses an environment (a `process.env`-like record) against a TypeBox object of string-typed
 * variables: applies defaults, converts numbers and booleans, and throws one `ConfigError` naming
 * every bad variable, so a misconfigured process says everything wrong at once and exits.
 */
export function parseEnv<T extends TObject>(
  schema: T,
  source: Record<string, string | undefined>,
): Static<T> {
  const input: Record<string, unknown> = {}
  for (const name of Object.keys(schema.properties)) {
    const raw = source[name]
    if (raw !== undefined && raw !== '') input[name] = raw
  }
  const value = Value.Convert(schema, Value.Default(schema, input))
  const problems = [...Value.Errors(schema, value)].map((e) => {
    const name = e.instancePath.replace(/^\//, '') || missingName(e.params)
    const shown = name && source[name] !== undefined && !SECRET_NAME.test(name)
    const given = shown ? ` (got ${JSON.stringify(source[name])})` : ''
    return `  ${name}: ${e.message}${given}`
  })
  problems.push(...commonEnvProblems(value as Record<string, unknown>))
  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n${[...new Set(problems)].join('\n')}`)
  }
  return value as Static<T>
}

/** What `commonEnv`'s variables cannot say one by one. */
function commonEnvProblems(value: Record<string, unknown>): string[] {
  if (typeof value.REDIS_URL === 'string' && value.REDIS_URL.includes(',') && value.REDIS_CLUSTER === false) {
    return ['  REDIS_URL: names several servers; set REDIS_CLUSTER=true for a Redis Cluster']
  }
  return []
}

/** Variables whose values are never echoed back, even when wrong. */
const SECRET_NAME = /TOKEN|SECRET|PASSWORD|_URL$/

/**
 * Runs checks that each answer problem lines (`  NAME: what is wrong`) or throw a `ConfigError`, and
 * throws one `ConfigError` naming every problem, so a process says all that is wrong at once.
 */
export function throwConfigProblems(checks: ReadonlyArray<() => string[] | undefined>): void {
  const problems: string[] = []
  for (const check of checks) {
    try {
      problems.push(...(check() ?? []))
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error
      problems.push(...error.message.split('\n').filter((line) => line.startsWith('  ')))
    }
  }
  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n${[...new Set(problems)].join('\n')}`)
  }
}

/** For a process entry point: a configuration that fails to load prints its message and exits 1. */
export function exitOnConfigError<T>(load: () => T): T {
  try {
    return load()
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    process.stderr.write(`${error.message}\n`)
    process.exit(1)
  }
}

function missingName(params: unknown): string {
  const required = (params as { requiredProperties?: string[] })?.requiredProperties
  return required?.join(', ') ?? '(root)'
}

/** Variables every process reads, with the defaults that run against local Postgres and Redis. */
export const commonEnv = {
  APP_ENV: Type.Enum(APP_ENVS, { default: 'development' }),
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
  /** `json` lines (the default), or `pretty` for a person at a terminal (`scripts/run.sh` picks it there). */
  LOG_FORMAT: Type.Enum(LOG_FORMATS, { default: 'json' }),
  DATABASE_URL: Type.String({
    pattern: '^postgres(ql)?://',
    default: 'postgres://postgres@127.0.0.1:5432/dispatch',
  }),
  /**
   * Postgres connections each process may open. With many processes, keep
   * processes × DATABASE_POOL_MAX below the server's `max_connections` (docs/operations.md).
   */
  DATABASE_POOL_MAX: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
  /**
   * The Redis server; with REDIS_CLUSTER, one or more of the cluster's nodes (comma-separated
   * URLs), from which the client learns the rest.
   */
  REDIS_URL: Type.String({
    pattern: '^rediss?://[^,]+(,rediss?://[^,]+)*$',
    default: 'redis://127.0.0.1:6379',
  }),
  /** Redis Cluster: connect with ioredis `Cluster` and give each queue a hash tag (docs/redis-and-postgres.md). */
  REDIS_CLUSTER: Type.Boolean({ default: false }),
  /**
   * Prefix of every Redis key and channel: the API and the workers must agree on it. It may hold
   * one `{hash tag}` (`{dispatch}`): on a cluster, every key then lives on one shard.
   */
  QUEUE_PREFIX: Type.String({
    pattern: '^[A-Za-z0-9_-]*(\\{[A-Za-z0-9_-]+\\})?[A-Za-z0-9_-]*$',
    minLength: 1,
    default: 'dispatch',
  }),
}

/**
 * Sender pools (docs/sender-pools.md), as the API (the choice on accept) and the workers (moving
 * waiting messages off a fallen number) both read them.
 */
export const poolEnv = {
  /**
   * A pool's number limited by the platform (130429) for longer than this from now leaves the
   * pool's rotation (its new recipients go to the others; its waiting messages move); a shorter
   * pause is waited out.
   */
  POOL_RATE_LIMIT_TOLERANCE_SECONDS: Type.Integer({ minimum: 1, maximum: 86_400, default: 60 }),
  /**
   * How long a recipient's sticky number is remembered without a send to them or a reply from
   * them: between this and twice this (packages/runtime/src/pool-sticky.ts).
   */
  POOL_STICKY_TTL_DAYS: Type.Integer({ minimum: 1, maximum: 365, default: 30 }),
}

export const PLATFORMS = ['sandbox', 'whatsapp-cloud'] as const
export type PlatformName = (typeof PLATFORMS)[number]

/**
 * The messaging platform, as every process that talks to it reads it: the worker sends through it
 * and the API uploads media to it, so both must name the same one.
 */
export const platformEnv = {
  /** Unset: `whatsapp-cloud` when its token and phone number id are set, else `sandbox`. */
  PLATFORM: Type.Optional(Type.Enum(PLATFORMS)),
  WHATSAPP_API_URL: Type.String({ pattern: '^https?://', default: 'https://graph.facebook.com/v21.0' }),
  WHATSAPP_ACCESS_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  WHATSAPP_PHONE_NUMBER_ID: Type.Optional(Type.String({ pattern: '^[0-9]+$' })),
  /** The business number the sandbox pretends to send from: replies to it are routed as usual. */
  SANDBOX_PHONE_NUMBER_ID: Type.String({ pattern: '^[0-9]+$', default: '100000000000001' }),
}

/** The business number of the environment's own (`default`) sender, on the platform in use. */
export const defaultPhoneNumberId = (config: {
  platform: PlatformName
  WHATSAPP_PHONE_NUMBER_ID?: string | undefined
  SANDBOX_PHONE_NUMBER_ID: string
}) =>
  (config.platform === 'whatsapp-cloud' ? config.WHATSAPP_PHONE_NUMBER_ID : undefined) ??
  config.SANDBOX_PHONE_NUMBER_ID

/** The platform a configuration asks for; `whatsapp-cloud` without its credentials is an error. */
export function choosePlatform(env: {
  PLATFORM?: PlatformName | undefined
  WHATSAPP_ACCESS_TOKEN?: string | undefined
  WHATSAPP_PHONE_NUMBER_ID?: string | undefined
}): PlatformName {
  const hasCredentials = Boolean(env.WHATSAPP_ACCESS_TOKEN && env.WHATSAPP_PHONE_NUMBER_ID)
  if (env.PLATFORM === 'whatsapp-cloud' && !hasCredentials) {
    throw new ConfigError(
      'Invalid configuration:\n  PLATFORM: whatsapp-cloud needs WHATSAPP_ACCESS_TOKEN and WHATSAPP_PHONE_NUMBER_ID',
    )
  }
  return env.PLATFORM ?? (hasCredentials ? 'whatsapp-cloud' : 'sandbox')
}
