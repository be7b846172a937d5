import { SEND_SCOPE } from '@dispatch/contracts'
import type { FastifyInstance, onRequestHookHandler, RouteOptions } from 'fastify'
import { errorResponses } from '../http/error-responses.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Under an API-key prefix, the scope the key needs: one of `Scopes`, `none` (any active key:
     * the key's own view of itself) or `in-route` (the handler decides from the request: a batch's
     * items, a message's type, an upload's kind). Admin prefixes need none.
     */
    scope?: string
    /**
     * With `scope: 'in-route'`, the scopes the handler may ask for, one per request (a media
     * upload's kind decides among the media send scopes). Unset, a message's type decides: any send
     * scope (`SEND_SCOPE`).
     */
    scopesInRoute?: readonly string[]
    /**
     * The prefix authenticates nothing here: the route is open (a sign-in, a key request) or checks
     * its credential itself (a session read or ended, the metrics token).
     */
    public?: boolean
  }
}

/** Any active key; the route needs no scope (`/me`-like). */
export const NO_SCOPE = 'none'
/** Any active key; the handler checks the scope the request turns out to need. */
export const SCOPE_IN_ROUTE = 'in-route'

/**
 * How a prefix authenticates every route under it, unless a route is marked `public`: an admin's
 * token or console session; an API key or portal session, with the route's scope; nothing (open, or
 * signed, as Meta's webhook); or a hook of the prefix's own (Bull Board's HTTP Basic).
 */
export type Authentication = 'admin' | 'api-key' | 'public' | 'own'

/**
 * The error answers each authentication gives before any handler runs: added to the response
 * schema (and so the OpenAPI document) of every route it covers, so no route types them out.
 */
const AUTHENTICATION_ERRORS = {
  admin: errorResponses('ADMIN_AUTH_REQUIRED'),
  'api-key': errorResponses('API_KEY_MISSING', 'API_KEY_INVALID', 'API_KEY_NOT_ACTIVE', 'INSUFFICIENT_SCOPE'),
} as const

/**
 * The OpenAPI extension listing the scopes an `in-route` operation may ask for: which one depends on
 * the request (a message's type), so no fixed `security` scope can say it.
 */
export const SCOPES_BY_REQUEST = 'x-scopes-by-request'

/** What a key's route declares it needs, as the OpenAPI document says it. */
export interface DocumentedScope {
  /** The scopes of the operation's `security` requirement: the key needs all of them. */
  scopes: string[]
  /** For an `in-route` operation, the scopes it may ask for, one per request. */
  byRequest?: readonly string[]
}

/** The documentation of a route's scope declaration: the one source of its OpenAPI scopes. */
export function documentedScope(config: {
  scope?: string
  scopesInRoute?: readonly string[]
}): DocumentedScope {
  const { scope, scopesInRoute } = config
  if (scope === undefined || scope === NO_SCOPE) return { scopes: [] }
  if (scope === SCOPE_IN_ROUTE) {
    return { scopes: [], byRequest: scopesInRoute ?? [...new Set(Object.values(SEND_SCOPE))] }
  }
  return { scopes: [scope] }
}

const DEFAULT_SCHEME = { admin: 'adminToken', 'api-key': 'apiKey' } as const

/**
 * Writes the route's OpenAPI `security` from the same declaration its check is built from: the
 * schemes the route names (by default the prefix's: `adminToken`, `apiKey`), each with the scope
 * the check asks for (`[{ apiKey: ['read:orders'] }]`), and for an `in-route` scope the scopes it
 * may ask for (`x-scopes-by-request`). Any scope a route wrote by hand is replaced: the document
 * cannot name another scope than the one enforced.
 */
function declareSecurity(route: RouteOptions, authentication: keyof typeof AUTHENTICATION_ERRORS): void {
  if (!route.schema) return
  const schema = route.schema as Record<string, unknown>
  const own = Array.isArray(schema.security)
    ? (schema.security as Record<string, unknown>[]).flatMap((requirement) => Object.keys(requirement))
    : []
  const schemes = own.length > 0 ? [...new Set(own)] : [DEFAULT_SCHEME[authentication]]
  const { scopes, byRequest } =
    authentication === 'admin' ? { scopes: [], byRequest: undefined } : documentedScope(route.config ?? {})
  schema.security = schemes.map((scheme) => ({ [scheme]: [...scopes] }))
  if (byRequest) schema[SCOPES_BY_REQUEST] = [...byRequest]
  else delete schema[SCOPES_BY_REQUEST]
}

/** Adds the authentication's error answers to a route's own (which win: a route may say more). */
function declareErrors(route: RouteOptions, authentication: keyof typeof AUTHENTICATION_ERRORS): void {
  if (!route.schema) return
  route.schema.response = { ...AUTHENTICATION_ERRORS[authentication], ...(route.schema.response as object) }
}

/** Routes whose prefix has declared its authentication (see `requireDeclaredAuthentication`). */
const declared = new WeakSet<RouteOptions>()

const onRequestOf = (route: RouteOptions): onRequestHookHandler[] => {
  const hooks = route.onRequest
  if (hooks === undefined) return []
  return (Array.isArray(hooks) ? hooks : [hooks]) as onRequestHookHandler[]
}

/**
 * Declares, once for a prefix (its entry plugin), how every route under it is authenticated: the
 * check is put first among each route's own `onRequest` hooks as the route is added, so no route
 * can forget it, and its error answers (401, 403) and its OpenAPI `security` are added to the
 * route's schema: under `api-key`, `[{ apiKey: [scope] }]` with the scope the check asks for
 * (`documentedScope`). Under `api-key`, a route that declares no scope (and is not `public`) fails
 * the app's start, naming the route: the next route cannot slip through with any key.
 */
export function authenticate(app: FastifyInstance, authentication: Authentication): void {
  app.addHook('onRoute', (route) => {
    declared.add(route)
    if (authentication === 'public' || authentication === 'own' || route.config?.public) return
    if (authentication === 'admin') {
      route.onRequest = [app.requireAdmin as onRequestHookHandler, ...onRequestOf(route)]
      declareErrors(route, authentication)
      declareSecurity(route, authentication)
      return
    }
    const scope = route.config?.scope
    if (scope === undefined) {
      throw new Error(
        `${route.method} ${route.url} is under an API-key prefix and declares no scope: give it ` +
          `config.scope (a scope, '${NO_SCOPE}' or '${SCOPE_IN_ROUTE}') or mark it config.public`,
      )
    }
    const check = app.requireApiKey(scope === NO_SCOPE || scope === SCOPE_IN_ROUTE ? undefined : scope)
    route.onRequest = [check, ...onRequestOf(route)]
    declareErrors(route, authentication)
    declareSecurity(route, authentication)
  })
}

/**
 * Watches every route added to `app` from now on; the function it returns throws, naming the
 * first, if a route was added under no prefix that declared its authentication (nor marked
 * `public` itself): a new prefix cannot forget to say who may call it.
 */
export function requireDeclaredAuthentication(app: FastifyInstance): () => void {
  const routes: RouteOptions[] = []
  app.addHook('onRoute', (route) => {
    routes.push(route)
  })
  return () => {
    const undeclared = routes.find((route) => !declared.has(route) && !route.config?.public)
    if (undeclared) {
      throw new Error(
        `${undeclared.method} ${undeclared.url} is under no prefix that declares its authentication ` +
          '(routes/authenticate.ts)',
      )
    }
  }
}
