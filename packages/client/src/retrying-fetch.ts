/** Answers that mean "not done, try again": rate limited, or the API (or what it needs) is unavailable. */
const RETRIED_STATUSES = new Set([429, 503])
/** POSTs under /third-party/ (the sends and order creation) honour an Idempotency-Key. */
const IDEMPOTENT_POST = /\/third-party\/.+/

export interface RetryOptions {
  /** Attempts after the first; 0 turns retries off. */
  retries: number
  /** The longest wait before a retry; an answer asking for longer is returned, not waited for. */
  maxDelayMs: number
  fetch: (request: Request) => Promise<Response>
  sleep?: (ms: number) => Promise<void>
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Retry-After in seconds (or an HTTP date); without one, 0.5 s doubling per attempt. */
export function retryDelayMs(response: Response, attempt: number, now = Date.now()): number {
  const header = response.headers.get('retry-after')?.trim()
  if (header && /^\d+$/.test(header)) return Number(header) * 1000
  const date = header ? Date.parse(header) : Number.NaN
  if (!Number.isNaN(date)) return Math.max(0, date - now)
  return 500 * 2 ** attempt
}

/**
 * A fetch that gives each send an Idempotency-Key (unless the caller set one) and retries 429 and
 * 503 answers after the wait they ask for. Every attempt carries the same key, so a send retried
 * after an answer that was lost or refused is accepted at most once.
 */
export function retryingFetch(options: RetryOptions): (request: Request) => Promise<Response> {
  const sleep = options.sleep ?? defaultSleep
  return async (request) => {
    if (
      request.method === 'POST' &&
      IDEMPOTENT_POST.test(new URL(request.url).pathname) &&
      !request.headers.has('idempotency-key')
    ) {
      request.headers.set('idempotency-key', globalThis.crypto.randomUUID())
    }
    for (let attempt = 0; ; attempt++) {
      // A body can be read once: each attempt sends a copy.
      const response = await options.fetch(request.clone())
      if (!RETRIED_STATUSES.has(response.status) || attempt >= options.retries) return response
      const delay = retryDelayMs(response, attempt)
      if (delay > options.maxDelayMs) return response
      await response.body?.cancel()
      await sleep(delay)
    }
  }
}
