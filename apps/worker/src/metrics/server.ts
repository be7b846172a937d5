import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { bearerTokenCheck, PROMETHEUS_CONTENT_TYPE } from '@dispatch/runtime'
import type { Logger } from 'pino'

export interface MetricsServerOptions {
  host: string
  /** 0: any free port. */
  port: number
  /** When set, only `Authorization: Bearer <token>` is answered (compared in constant time). */
  token: string | undefined
  scrape(): Promise<string>
  logger: Logger
  /**
   * Wrong tokens one address may send in a window before it is refused (429, even with the right
   * token) until the window ends, as the API limits wrong keys: 20 a minute by default.
   */
  failureLimit?: { max: number; windowMs: number }
}

export interface MetricsServer {
  /** Where it listens: `http://host:port`. */
  url: string
  close(): Promise<void>
}

/**
 * Counts wrong tokens per remote address in fixed windows, in this process (each worker has its
 * own listener). Entries are dropped once their window is over, so the map holds only addresses
 * seen within the last window.
 */
function failureCounter({ max, windowMs }: { max: number; windowMs: number }) {
  const windows = new Map<string, { count: number; endsAt: number }>()
  const sweep = setInterval(() => {
    const now = Date.now()
    for (const [address, window] of windows) if (window.endsAt <= now) windows.delete(address)
  }, windowMs)
  sweep.unref()
  const current = (address: string) => {
    const window = windows.get(address)
    return window && window.endsAt > Date.now() ? window : undefined
  }
  return {
    /** Seconds until the address may try again, when it is over the limit. */
    blockedFor(address: string): number | undefined {
      const window = current(address)
      return window && window.count >= max ? Math.ceil((window.endsAt - Date.now()) / 1000) : undefined
    },
    failed(address: string) {
      const window = current(address)
      if (window) window.count++
      else windows.set(address, { count: 1, endsAt: Date.now() + windowMs })
    },
    stop: () => clearInterval(sweep),
  }
}

const plain = (status: number, body: string, headers: Record<string, string> = {}) => ({
  status,
  body,
  headers: { 'content-type': 'text/plain; charset=utf-8', ...headers },
})

/**
 * A bare `node:http` listener with one route, `GET /metrics`: a worker has no HTTP framework and
 * needs none for this. Anything else is 404; without a valid token (when one is set), a plain 401.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const authorized = options.token ? bearerTokenCheck(options.token) : () => true
  const failures = failureCounter(options.failureLimit ?? { max: 20, windowMs: 60_000 })
  const answer = async (
    method: string | undefined,
    path: string,
    authorization: string | undefined,
    address: string,
  ) => {
    if (path !== '/metrics') return plain(404, 'Not found\n')
    if (method !== 'GET' && method !== 'HEAD')
      return plain(405, 'Method not allowed\n', { allow: 'GET, HEAD' })
    const blocked = failures.blockedFor(address)
    if (blocked !== undefined) {
      return plain(429, 'Too many wrong tokens; try again later\n', { 'retry-after': String(blocked) })
    }
    if (!authorized(authorization)) {
      failures.failed(address)
      return plain(401, 'Unauthorized\n', { 'www-authenticate': 'Bearer' })
    }
    try {
      return {
        status: 200,
        body: await options.scrape(),
        headers: { 'content-type': PROMETHEUS_CONTENT_TYPE },
      }
    } catch (error) {
      options.logger.warn({ err: error }, 'metrics scrape failed')
      return plain(500, 'Metrics could not be collected\n')
    }
  }
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0] ?? ''
    const address = request.socket.remoteAddress ?? 'unknown'
    answer(request.method, path, request.headers.authorization, address).then(({ status, body, headers }) => {
      response.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) })
      response.end(request.method === 'HEAD' ? undefined : body)
    })
  })
  // A scraper that connects and says nothing is dropped, rather than holding a socket forever.
  server.requestTimeout = 10_000
  server.headersTimeout = 5_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  server.on('error', (error) => options.logger.warn({ err: error }, 'metrics listener error'))
  const { address, port } = server.address() as AddressInfo
  const host = address.includes(':') ? `[${address}]` : address
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        failures.stop()
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
