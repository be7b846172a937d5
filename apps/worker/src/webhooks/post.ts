import { EventEmitter } from 'node:events'
import type { Readable } from 'node:stream'
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
 * One request through undici (a pool of kept-alive connections per origin): about half the CPU of
 * `node:http` per request. The deadline aborts it: before the status, a failure; after, it only
 * cuts the body short.
 */
async function send(post: WebhookPost, url: URL, deadline: number, retried = false): Promise<Attempt> {
  // undici takes an EventEmitter as the signal: half an AbortController's cost per request.
  const abort = new EventEmitter()
  let timedOut = false
  const timer = setTimeout(
    () => {
      timedOut = true
      abort.emit('abort')
    },
    Math.max(0, Math.round(deadline - performance.now())),
  )
  try {
    const res = await (post.dispatcher ?? sharedDispatcher(post.allowPrivate)).request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...post.headers },
      body: post.body,
      signal: abort,
    })
    const status = res.statusCode
    const retryAfter = res.headers['retry-after']
    const excerpt = await readExcerpt(res.body)
    return {
      statusCode: status,
      responseExcerpt: excerpt(),
      retryAfterMs: parseRetryAfter(typeof retryAfter === 'string' ? retryAfter : undefined),
      error: failureOf(status),
    }
  } catch (error) {
    if (timedOut) return noResponse(`timed out after ${post.timeoutMs} ms`)
    return !retried && isStale(error) ? 'stale-socket' : noResponse(describe(error))
  } finally {
    clearTimeout(timer)
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

/**
 * Reads the body as it comes, keeping its first `EXCERPT_BYTES` and dropping the rest, so a large
 * answer is never held whole; a body past `DRAIN_LIMIT_BYTES` is cut (its connection is not
 * reused). Resolves once the body has ended or was cut (a deadline passing cuts it too), to what
 * was kept, as text.
 */
function readExcerpt(body: Readable): Promise<() => string> {
  const kept: Buffer[] = []
  let keptBytes = 0
  let seenBytes = 0
  const text = () => {
    if (keptBytes === 0) return ''
    const bytes = kept.length === 1 ? (kept[0] as Buffer) : Buffer.concat(kept)
    // A StringDecoder holds back a character cut in two at the end, rather than mangling it.
    return seenBytes > keptBytes ? new StringDecoder('utf8').write(bytes) : bytes.toString('utf8')
  }
  return new Promise((resolve) => {
    const done = () => resolve(text)
    body.on('data', (chunk: Buffer) => {
      seenBytes += chunk.length
      if (keptBytes < EXCERPT_BYTES) {
        const part = chunk.subarray(0, EXCERPT_BYTES - keptBytes)
        kept.push(part)
        keptBytes += part.length
      }
      if (seenBytes > DRAIN_LIMIT_BYTES) {
        body.destroy()
        done()
      }
    })
    body.on('end', done)
    body.on('error', done)
    body.on('close', done)
  })
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
