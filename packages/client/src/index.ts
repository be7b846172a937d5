import createClient, { type Client, type MaybeOptionalInit, type MethodResponse } from 'openapi-fetch'
import type { HttpMethod, PathsWithMethod, RequiredKeysOf } from 'openapi-typescript-helpers'
import { DispatchError } from './errors.ts'
import { retryingFetch } from './retrying-fetch.ts'
import type { paths } from './schema.ts'

export { DispatchError } from './errors.ts'
export type { components, operations, paths } from './schema.ts'

export interface DispatchClientOptions {
  /** The API's base URL, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string
  /** Sent as `x-api-key`: the sender's key. */
  apiKey?: string
  /** Sent as `Authorization: Bearer …`, for the admin routes. */
  adminToken?: string
  /** Retries of a 429 or 503 answer, after the wait its Retry-After asks for. Default 3; 0 turns them off. */
  retries?: number
  /** The longest wait before a retry; an answer asking for longer is thrown at once. Default 30 000 ms. */
  maxRetryDelayMs?: number
  /** A fetch of your own (tests, proxies, instrumentation). Default `globalThis.fetch`. */
  fetch?: (request: Request) => Promise<Response>
  /**
   * A cookie session (the console, the portal), in place of a header credential: requests carry the
   * browser's same-origin cookies, and every change carries the session's CSRF token as `x-csrf-token`.
   * A function, so a page can sign in (and out) after the client is made; keep the token in memory.
   */
  session?: { csrfToken: () => string | undefined }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Adds the session's CSRF token to every change. */
const withCsrfToken =
  (csrfToken: () => string | undefined, fetch: (request: Request) => Promise<Response>) =>
  (request: Request) => {
    const token = csrfToken()
    if (token && !SAFE_METHODS.has(request.method)) request.headers.set('x-csrf-token', token)
    return fetch(request)
  }

// openapi-fetch's own argument typing, with the answer unwrapped: the success body, or a DispatchError.
type InitParam<Init> = RequiredKeysOf<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init]
type Call<Method extends HttpMethod> = <
  Path extends PathsWithMethod<paths, Method>,
  Init extends MaybeOptionalInit<paths[Path], Method>,
>(
  url: Path,
  ...init: InitParam<Init>
) => Promise<MethodResponse<Client<paths>, Method, Path, Init>>

export interface DispatchClient {
  GET: Call<'get'>
  POST: Call<'post'>
  PATCH: Call<'patch'>
  DELETE: Call<'delete'>
  /** The openapi-fetch client underneath: answers as `{ data, error, response }`, nothing thrown. */
  raw: Client<paths>
}

/**
 * A typed client of the Dispatch API. Each call resolves to the success body, typed from the
 * OpenAPI document, or throws a `DispatchError`. Sends get an `Idempotency-Key` (a random UUID,
 * unless you pass one in `headers`) that their retries reuse.
 */
export function createDispatchClient(options: DispatchClientOptions): DispatchClient {
  const headers: Record<string, string> = {}
  if (options.apiKey) headers['x-api-key'] = options.apiKey
  if (options.adminToken) headers.authorization = `Bearer ${options.adminToken}`
  const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request))
  const raw = createClient<paths>({
    baseUrl: options.baseUrl,
    headers,
    ...(options.session ? { credentials: 'same-origin' as const } : {}),
    fetch: retryingFetch({
      retries: options.retries ?? 3,
      maxDelayMs: options.maxRetryDelayMs ?? 30_000,
      fetch: options.session ? withCsrfToken(options.session.csrfToken, baseFetch) : baseFetch,
    }),
  })
  const call =
    (method: 'GET' | 'POST' | 'PATCH' | 'DELETE') =>
    async (url: string, init?: object): Promise<unknown> => {
      const { data, error, response } = await (raw[method] as (u: string, i?: object) => Promise<Answer>)(
        url,
        init,
      )
      if (!response.ok) throw DispatchError.fromResponse(response, error)
      return data
    }
  return {
    GET: call('GET') as Call<'get'>,
    POST: call('POST') as Call<'post'>,
    PATCH: call('PATCH') as Call<'patch'>,
    DELETE: call('DELETE') as Call<'delete'>,
    raw,
  }
}

interface Answer {
  data?: unknown
  error?: unknown
  response: Response
}
