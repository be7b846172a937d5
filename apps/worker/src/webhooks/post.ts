import type { IncomingHttpHeaders } from 'node:http'
import { StringDecoder } from 'node:string_decoder'
import type { Dispatcher } from 'undici'
import { checkDestination, type DestinationRules, sharedDispatcher } from './destination.ts'

export interface WebhookPost extends DestinationRules {
  url: string
  /** The signature headers and any others; content-type and user-agent are set here. */
  headers: Record<string, string>
  body: string
  /** For everything: lookup, connect, TLS, sending and the response's status and headers. */
  timeoutMs: number
  /**
   * A dispatcher to use instead of the process's shared keep-alive ones. Never share one between
   * deliveries with different `allowPrivate`.
   */
  dispatcher?: Dispatcher
}

export interface WebhookPostResult {
  /** Any 2xx is a success; everything else, a redirect included, is a failure. */
  outcome: 'success' | 'failure'
  /** Null when no response came. */
  statusCode: number | null
  durationMs: number
  /** The first 1 KiB of the response body as UTF-8 (a character cut at the end dropped); null without a response. */
  responseExcerpt: string | null
  /** From `Retry-After` (seconds or an HTTP date) on any response; null without one. */
  retryAfterMs: number | null
  /** Why it failed, for people reading the attempts log; never quotes headers or the body. */
  error: string | null
}

const EXCERPT_BYTES = 1024
/** Past this much of a response body, the connection is dropped rather than drained for reuse. */
const DRAIN_LIMIT_BYTES = 64 * 1024
const USER_AGENT = 'Dispatch-Webhooks/1'

type Answer = Omit<WebhookPostResult, 'outcome' | 'durationMs'>
type Attempt = Answer | 'stale-socket'

/**
 * One POST of one webhook, never following a redirect. Never throws: every way it can go wrong is a
 * failure with its reason. The destination is checked again first (scheme, credentials, and with
 * `allowPrivate` false, the address actually connected to).
 */
export async function postWebhook(post: WebhookPost): Promise<WebhookPostResult> {
  const started = performance.now()
  const finish = (answer: Answer): WebhookPostResult => ({
    outcome:
      answer.statusCode !== null && answer.statusCode >= 200 && answer.statusCode < 300
        ? 'success'
        : 'failure',
    durationMs: Math.round(performance.now() - started),
    ...answer,
  })
  const url = checkDestination(post.url, post)
  if (typeof url === 'string') return finish(noResponse(url))

  const deadline = started + post.timeoutMs
  let attempt = await send(post, url, deadline)
  // A kept-alive connection the receiver had just closed: tried once more, on a new one.
  if (attempt === 'stale-socket') attempt = await send(post, url, deadline, true)
  return finish(attempt === 'stale-socket' ? noResponse('connection reset') : attempt)
}

const noResponse = (error: string): Answer => ({
  statusCode: null,
  responseExcerpt: null,
  retryAfterMs: null,
  error,
})

/**
 * One request through undici's own dispatch (a pool of kept-alive connections per origin), answered
 * to a handler: no response stream, no promise per stage. `request()` cost about 12 µs of CPU more a
 * POST (its body a Readable, an abort signal), `node:http` about twice as much. The deadline aborts
 * it: before the status, a failure; after, it only cuts the body short.
 */
function send(post: WebhookPost, url: URL, deadline: number, retried = false): Promise<Attempt> {
  return new Promise((resolve) => {
    const exchange = new Exchange(post.timeoutMs, retried, resolve)
    exchange.timer = setTimeout(exchange.expire, Math.max(0, Math.round(deadline - performance.now())))
    try {
      ;(post.dispatcher ?? sharedDispatcher(post.allowPrivate)).dispatch(
        {
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...post.headers },
          body: post.body,
        },
        exchange,
      )
    } catch (error) {
      // Arguments undici refuses (a header value it cannot send): a failure, never a throw.
      exchange.onResponseError(undefined, error as Error)
    }
  })
}

/**
 * The answer to one request as it comes: the status, `Retry-After`, and the body's first
 * `EXCERPT_BYTES` (the rest dropped, so a large answer is never held whole; a body past
 * `DRAIN_LIMIT_BYTES` is cut and its connection not reused). Settles once: at the body's end, on an
 * error, or at the deadline.
 */
class Exchange implements Dispatcher.DispatchHandler {
  timer: NodeJS.Timeout | undefined
  #controller: Dispatcher.DispatchController | undefined
  #status: number | null = null
  #retryAfter: string | undefined
  readonly #kept: Buffer[] = []
  #keptBytes = 0
  #seenBytes = 0
  #settled = false
  #timedOut = false
  readonly #timeoutMs: number
  readonly #retried: boolean
  readonly #resolve: (attempt: Attempt) => void

  constructor(timeoutMs: number, retried: boolean, resolve: (attempt: Attempt) => void) {
    this.#timeoutMs = timeoutMs
    this.#retried = retried
    this.#resolve = resolve
  }

  /**
   * The deadline: settles as an error would (the status kept if one came), and aborts the request;
   * one still waiting for a connection is aborted once it gets one.
   */
  readonly expire = () => {
    this.#timedOut = true
    const reason = this.#timeout()
    this.onResponseError(this.#controller, reason)
    this.#controller?.abort(reason)
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#timedOut) controller.abort(this.#timeout())
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) return
    this.#status = statusCode
    const retryAfter = headers['retry-after']
    this.#retryAfter = typeof retryAfter === 'string' ? retryAfter : undefined
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#seenBytes += chunk.length
    if (this.#keptBytes < EXCERPT_BYTES) {
      const part = chunk.subarray(0, EXCERPT_BYTES - this.#keptBytes)
      this.#kept.push(part)
      this.#keptBytes += part.length
    }
    if (this.#seenBytes > DRAIN_LIMIT_BYTES) {
      this.#settle(this.#answer())
      controller.abort(new Error('response body too large; connection dropped'))
    }
  }

  onResponseEnd(): void {
    this.#settle(this.#answer())
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    if (this.#status !== null) this.#settle(this.#answer())
    else if (this.#timedOut) this.#settle(noResponse(this.#timeout().message))
    else this.#settle(!this.#retried && isStale(error) ? 'stale-socket' : noResponse(describe(error)))
  }

  #timeout(): Error {
    return new Error(`timed out after ${this.#timeoutMs} ms`)
  }

  #answer(): Answer {
    const status = this.#status as number
    return {
      statusCode: status,
      responseExcerpt: this.#text(),
      retryAfterMs: parseRetryAfter(this.#retryAfter),
      error: failureOf(status),
    }
  }

  /** What was kept, as text; a StringDecoder holds back a character cut in two at the end. */
  #text(): string {
    if (this.#keptBytes === 0) return ''
    const bytes = this.#kept.length === 1 ? (this.#kept[0] as Buffer) : Buffer.concat(this.#kept)
    return this.#seenBytes > this.#keptBytes ? new StringDecoder('utf8').write(bytes) : bytes.toString('utf8')
  }

  #settle(attempt: Attempt): void {
    if (this.#settled) return
    this.#settled = true
    clearTimeout(this.timer)
    this.#resolve(attempt)
  }
}

/**
 * A connection closed by the other side under a request, when it had already carried an answer:
 * a kept-alive one the receiver closed as it was reused. A new connection that fails is not one.
 */
function isStale(error: unknown): boolean {
  const { code, socket } = error as { code?: string; socket?: { bytesRead?: number } }
  return code === 'UND_ERR_SOCKET' && (socket?.bytesRead ?? 0) > 0
}

function failureOf(status: number): string | null {
  if (status >= 200 && status < 300) return null
  if (status >= 300 && status < 400) return `redirect (${status}) not followed`
  return `responded with HTTP ${status}`
}

/** `Retry-After` in ms: whole seconds, or an HTTP date (0 when already past). */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  const text = value?.trim()
  if (!text) return null
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const at = Date.parse(text)
  return Number.isNaN(at) ? null : Math.max(0, at - now)
}

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  UND_ERR_SOCKET: 'connection reset',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ENOTFOUND: 'host does not resolve',
  EAI_AGAIN: 'host does not resolve (temporary DNS failure)',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
}

/** A reason from the error's code; Node's messages for these never carry header values. */
function describe(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException
  if (code === 'EWEBHOOKBLOCKED') return message
  if (code && REASONS[code]) return REASONS[code]
  return code ? `${code}: ${message}` : message
}
