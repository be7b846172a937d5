/** Log paths pino censors in every process: secrets never reach a log line, whatever carries them. */
export const REDACTED_LOG_PATHS = [
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
]
