import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino'

/**
 * Each request's logger (`request.log`), made when the request first logs a line at a level the
 * logger writes. Fastify makes pino's child for every request, and that child (its bindings
 * serialized, redaction set up for it) was about 4 % of a send's CPU; at `warn`, the level a
 * high-volume API runs at, a request that goes well logs nothing and needs none. The lines a
 * request does log are pino's child's, the request id bound, as before.
 */
export function lazyRequestLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  // A route's own level (its `logLevel`) decides on its own: made at once.
  if (options.level !== undefined) return logger.child(bindings, options)
  return new RequestLogger(logger as Logger, bindings, options)
}

class RequestLogger implements FastifyBaseLogger {
  readonly #parent: Logger
  readonly #bindings: Bindings
  readonly #options: ChildLoggerOptions
  #made: FastifyBaseLogger | undefined

  constructor(parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
  }

  #logger(): FastifyBaseLogger {
    this.#made ??= this.#parent.child(this.#bindings, this.#options)
    return this.#made
  }

  /** Writes through the request's child when `level` is written, made now if it is not yet. */
  #write(level: Level, args: unknown[]): void {
    const to = this.#made ?? (this.#parent.isLevelEnabled(level) ? this.#logger() : undefined)
    if (to) (to[level] as (...args: unknown[]) => void).apply(to, args)
  }

  get level(): string {
    return this.#made?.level ?? this.#parent.level
  }

  set level(level: string) {
    this.#logger().level = level
  }

  fatal(...args: unknown[]): void {
    this.#write('fatal', args)
  }
  error(...args: unknown[]): void {
    this.#write('error', args)
  }
  warn(...args: unknown[]): void {
    this.#write('warn', args)
  }
  info(...args: unknown[]): void {
    this.#write('info', args)
  }
  debug(...args: unknown[]): void {
    this.#write('debug', args)
  }
  trace(...args: unknown[]): void {
    this.#write('trace', args)
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger().child(bindings, options)
  }
}
