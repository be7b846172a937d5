import cookie from '@fastify/cookie'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, unavailable } from '../errors.ts'
import { cookieNameFor, isLoopbackRequest } from './session-cookies.ts'
import {
  CSRF_HEADER,
  csrfMatches,
  isSafeMethod,
  type SessionKind,
  SessionStore,
  type StoredSession,
} from './sessions.ts'

declare module 'fastify' {
  interface FastifyInstance {
    consoleSessions: SessionStore
    /**
     * The session of that kind the request's cookie names, CSRF-checked for a change; undefined
     * when the request carries no such cookie. A cookie naming no live session is refused with
     * `refusal`, as a wrong credential would be.
     */
    sessionOf(
      request: FastifyRequest,
      kind: SessionKind,
      refusal: () => AppError,
    ): Promise<StoredSession | undefined>
    /** Sets the session cookie on the answer. */
    setSessionCookie(reply: FastifyReply, kind: SessionKind, id: string): void
    /** Ends the session the request's cookie of that kind names, and clears the cookie. */
    endSession(request: FastifyRequest, reply: FastifyReply, kind: SessionKind): Promise<void>
  }
  interface FastifyRequest {
    /** The console or portal session the request came with, if it came with one. */
    consoleSession: StoredSession | null
  }
}

/**
 * Cookie sessions beside the headers' credentials: the admin routes take the console's cookie in
 * place of `Authorization`, the key's routes the portal's in place of `x-api-key`. Cookies are read
 * only there, and only when the header is absent: the send path (a key in its header) parses none.
 */
export const sessionAuth = fp(
  async (app: FastifyInstance) => {
    const { config, redis, clock } = app.deps
    // Parsing on demand only (no hook on every request).
    await app.register(cookie, { hook: false })
    const store = new SessionStore({
      redis,
      prefix: config.QUEUE_PREFIX,
      ttlMs: config.CONSOLE_SESSION_TTL_MS,
      idleMs: config.CONSOLE_SESSION_IDLE_MS,
      adminTokens: config.adminTokens,
      clock,
    })
    // The same attributes to set and to clear the cookie with (a browser matches them). `Secure`,
    // and the `__Host-` name that requires it, everywhere but plain HTTP on loopback
    // (session-cookies.ts says why).
    const cookieOf = (request: FastifyRequest, kind: SessionKind) => {
      const loopback = isLoopbackRequest(request)
      return {
        name: cookieNameFor(kind, loopback),
        options: { path: '/', httpOnly: true, sameSite: 'strict', secure: !loopback } as const,
      }
    }

    app.decorate('consoleSessions', store)
    app.decorateRequest('consoleSession', null)
    app.decorate('sessionOf', async (request: FastifyRequest, kind: SessionKind, refusal: () => AppError) => {
      const header = request.headers.cookie
      if (!header) return undefined
      const id = app.parseCookie(header)[cookieOf(request, kind).name]
      if (id === undefined) return undefined
      let session: StoredSession | undefined
      try {
        session = await store.find(kind, id)
      } catch (error) {
        request.log.error({ err: error }, 'console session lookup failed')
        throw unavailable('check the session')
      }
      if (!session) throw refusal()
      if (!isSafeMethod(request.method) && !csrfMatches(session, request.headers[CSRF_HEADER])) {
        throw new AppError(
          'CSRF_TOKEN_INVALID',
          `A change made with a session needs its CSRF token in the ${CSRF_HEADER} header`,
        )
      }
      request.consoleSession = session
      return session
    })
    app.decorate('setSessionCookie', (reply: FastifyReply, kind: SessionKind, id: string) => {
      const { name, options } = cookieOf(reply.request, kind)
      reply.setCookie(name, id, { ...options, maxAge: Math.floor(store.ttlMs / 1000) })
    })
    app.decorate('endSession', async (request: FastifyRequest, reply: FastifyReply, kind: SessionKind) => {
      const { name, options } = cookieOf(request, kind)
      await store.end(app.parseCookie(request.headers.cookie ?? '')[name])
      reply.clearCookie(name, options)
    })
  },
  { name: 'session-auth' },
)

/** The refusal that says to sign in, for a request without a session of that kind. */
export const noSession = (kind: SessionKind) =>
  kind === 'admin'
    ? new AppError('ADMIN_AUTH_REQUIRED', 'No console session: sign in with an admin name and token')
    : new AppError('API_KEY_MISSING', 'No portal session: sign in with an API key')

/** The request's live session of that kind, or the refusal that says to sign in. */
export async function liveSession(app: FastifyInstance, request: FastifyRequest, kind: SessionKind) {
  const session = await app.sessionOf(request, kind, () => noSession(kind))
  if (!session) throw noSession(kind)
  return session
}
