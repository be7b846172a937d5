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
  'WHATSAPP_ACCESS_TOKEN',
  '*.WHATSAPP_ACCESS_TOKEN',
]

/** The pino options of every process: its level, and the one redaction policy. */
export const loggerOptions = (level: string) => ({
  level,
  redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
})
