import { type Agent, type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { StringDecoder } from 'node:string_decoder'
import { checkDestination, type DestinationRules, lookups, sharedAgent } from './destination.ts'

export interface WebhookPost extends DestinationRules {
  url: string
  /** The signature headers and any others; content-type, user-agent and content-length are set here. */
  headers: Record<string, string>
  body: string
  /** For everything: lookup, connect, TLS, sending and the response's status and headers. */
  timeoutMs: number
  /**
   * An agent of the URL's scheme (an https.Agent for https) to use instead of the process's shared
   * keep-alive ones. Never share one between deliveries with different `allowPrivate`.
   */
  agent?: Agent
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
/** Past this much of a response body, the socket is dropped rather than drained for reuse. */
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
  // A kept-alive socket the receiver had just closed: Node's advice is to retry once on a new one.
  if (attempt === 'stale-socket') attempt = await send(post, url, deadline, true)
  return finish(attempt === 'stale-socket' ? noResponse('connection reset') : attempt)
}

const noResponse = (error: string): Answer => ({
  statusCode: null,
  responseExcerpt: null,
  retryAfterMs: null,
  error,
})

function send(post: WebhookPost, url: URL, deadline: number, retried = false): Promise<Attempt> {
  return new Promise((resolve) => {
    const body = Buffer.from(post.body)
    const options = {
      method: 'POST',
      agent: post.agent ?? sharedAgent(url, post.allowPrivate),
      lookup: post.allowPrivate ? lookups.private : lookups.public,
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        ...post.headers,
        'content-length': String(body.length),
      },
    }
    let req: ClientRequest
    let settled = false
    const timeoutMs = Math.max(0, Math.round(deadline - performance.now()))
    const settle = (attempt: Attempt) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(attempt)
    }
    // Until the status arrives a timeout fails the delivery; after it, it only cuts the body short.
    let answered: (() => Answer) | undefined
    const timer = setTimeout(() => {
      settle(answered ? answered() : noResponse(`timed out after ${post.timeoutMs} ms`))
      req.destroy()
    }, timeoutMs)

    try {
      req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options)
    } catch (error) {
      // Bad header values, an agent of the wrong scheme: thrown before anything is sent.
      clearTimeout(timer)
      resolve(noResponse(describe(error)))
      return
    }
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (answered) return settle(answered())
      const stale = !retried && req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE')
      settle(stale ? 'stale-socket' : noResponse(describe(error)))
    })
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0
      const excerpt = readExcerpt(res)
      const answer = (): Answer => ({
        statusCode: status,
        responseExcerpt: excerpt(),
        retryAfterMs: parseRetryAfter(res.headers['retry-after']),
        error: failureOf(status),
      })
      answered = answer
      res.on('end', () => settle(answer()))
      res.on('close', () => settle(answer()))
    })
    req.end(body)
  })
}

/**
 * Keeps the first `EXCERPT_BYTES` of a body and drops the rest as it comes, so a large answer is
 * never held whole; a body past `DRAIN_LIMIT_BYTES` is cut (its socket is not reused). Returns
 * what was kept, as text.
 */
function readExcerpt(res: IncomingMessage): () => string {
  const kept: Buffer[] = []
  let keptBytes = 0
  let seenBytes = 0
  res.on('data', (chunk: Buffer) => {
    seenBytes += chunk.length
    if (keptBytes < EXCERPT_BYTES) {
      const part = chunk.subarray(0, EXCERPT_BYTES - keptBytes)
      kept.push(part)
      keptBytes += part.length
    }
    if (seenBytes > DRAIN_LIMIT_BYTES) res.destroy()
  })
  return () => {
    if (keptBytes === 0) return ''
    const bytes = kept.length === 1 ? (kept[0] as Buffer) : Buffer.concat(kept)
    // A StringDecoder holds back a character cut in two at the end, rather than mangling it.
    return seenBytes > keptBytes ? new StringDecoder('utf8').write(bytes) : bytes.toString('utf8')
  }
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
