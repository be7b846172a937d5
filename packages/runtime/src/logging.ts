import { createRequire } from 'node:module'
import { type DestinationStream, type LoggerOptions, stdSerializers } from 'pino'

/** Log paths pino censors in every process: secrets never reach a log line, whatever carries them. */
const REDACTED_LOG_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'headers["x-api-key"]',
  'headers.authorization',
  'key',
  '*.key',
  'apiKey',
  'token',
  '*.token',
  'smtpUrl',
  // The WhatsApp Cloud API bearer token, should a config or adapter object ever be logged.
  'accessToken',
  '*.accessToken',
  // An admin's sender token, should a request body (`req.body`, `request.body`) ever be logged.
  '*.body.accessToken',
  'WHATSAPP_ACCESS_TOKEN',
  '*.WHATSAPP_ACCESS_TOKEN',
]

const CENSOR = '[redacted]'

/**
 * Secrets by their shape, wherever they appear in a line: API keys (the 14-character prefix admins
 * read stays), SHA-256 digests (a key's hash) and webhook signing secrets.
 */
const SECRET_SHAPES = [
  'mdk_(?:dev|prod)_[A-Za-z0-9_-]{20,}',
  '(?<![0-9A-Fa-f])[0-9a-f]{64}(?![0-9A-Fa-f])',
  'whsec_[A-Za-z0-9+/=_-]{16,}',
]

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * The last line of defence, run on every serialized line: each configured secret value (as written
 * and as JSON escapes it) and each secret shape becomes `[redacted]`. Redaction paths and the error
 * serializer keep secrets out at their source; this catches what a future log call forgets.
 */
export function secretCensor(secrets: readonly (string | undefined)[]): (line: string) => string {
  // The list may grow while the process runs (a worker learns senders' tokens): the pattern is
  // rebuilt when it does.
  let compiledFor = -1
  let pattern = /$^/g
  const compile = () => {
    const literals = [...new Set(secrets.filter((s): s is string => typeof s === 'string' && s.length >= 6))]
      .flatMap((s) => [s, JSON.stringify(s).slice(1, -1)])
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp)
    pattern = new RegExp([...literals, ...SECRET_SHAPES].join('|'), 'g')
    compiledFor = secrets.length
  }
  return (line) => {
    if (compiledFor !== secrets.length) compile()
    return line.replace(pattern, CENSOR)
  }
}

/** The password of a connection URL (`smtp://user:pass@host`), if it has one. */
export function urlPassword(url: string | undefined): string | undefined {
  if (!url) return undefined
  try {
    // A cluster's REDIS_URL lists several nodes; the first one's password is the one used.
    return decodeURIComponent(new URL(url.split(',')[0] as string).password) || undefined
  } catch {
    return undefined
  }
}

/** A failed query's parameters (drizzle puts them in the message and in `params`) hold key hashes and e-mails. */
const QUERY_PARAMS = /\nparams: [^\n]*/g

/** pino's error serializer, less the query parameters a database error carries. */
function serializeError(error: unknown) {
  const serialized = stdSerializers.err(error as Error) as ReturnType<typeof stdSerializers.err> &
    Record<string, unknown>
  if (!serialized || typeof serialized !== 'object') return serialized
  for (const field of ['params', 'parameters', 'args']) delete serialized[field]
  for (const field of ['message', 'stack'] as const) {
    const text = serialized[field]
    if (typeof text === 'string') serialized[field] = text.replace(QUERY_PARAMS, '\nparams: [redacted]')
  }
  return serialized
}

/** The pino options of every process: its level, the one redaction policy, and its secrets' censor. */
export const loggerOptions = (
  level: string,
  secrets: readonly (string | undefined)[] = [],
): LoggerOptions & { serializers: Record<string, (value: never) => unknown> } => ({
  level,
  redact: { paths: REDACTED_LOG_PATHS, censor: CENSOR },
  serializers: { err: serializeError },
  hooks: { streamWrite: secretCensor(secrets) },
})

/** The log formats: JSON lines (the default, what log shippers read) or lines for a person. */
export const LOG_FORMATS = ['json', 'pretty'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

/**
 * Where a process writes its log lines: standard output as JSON (`undefined`: pino's default), or
 * pretty-printed for a person at a terminal. Secrets are censored before either.
 */
export function logDestination(format: LogFormat): DestinationStream | undefined {
  if (format === 'json') return undefined
  // Loaded only here: a process writing JSON (production, the tests) never pays for it.
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty')
  return pretty({
    // Colours only where a terminal shows them, not in a file or a pipe.
    colorize: Boolean(process.stdout.isTTY),
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: true,
    sync: true,
  })
}
