import {
  AdminSession,
  AdminSessionsRevokeBody,
  AdminSessionsRevoked,
  AdminSignInBody,
  PortalSession,
  PortalSignInBody,
} from '@dispatch/contracts'
import { hashApiKey, recordAdminAction } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError, unavailable } from '../errors.ts'
import { errorResponses } from '../routes/responses.ts'
import type { SessionKind, StoredSession } from './sessions.ts'

const adminView = (session: StoredSession): AdminSession => ({
  kind: 'admin',
  actor: session.actor,
  csrfToken: session.csrfToken,
  expiresAt: session.expiresAt,
})

const ended = (kind: SessionKind) =>
  kind === 'admin'
    ? new AppError('ADMIN_AUTH_REQUIRED', 'No console session: sign in with an admin name and token')
    : new AppError('API_KEY_MISSING', 'No portal session: sign in with an API key')

/** The request's live session of that kind, or the refusal that says to sign in. */
async function sessionOrRefusal(app: FastifyInstance, request: FastifyRequest, kind: SessionKind) {
  const session = await app.sessionOf(request, kind, () => ended(kind))
  if (!session) throw ended(kind)
  return session
}

/**
 * `/api/admin/session`: an admin's name and token exchanged for the console's session cookie; the
 * session read back (its CSRF token after a reload) and ended. Wrong credentials count against
 * the admin brute-force limit, as on every admin route.
 */
export const adminSessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tags = ['console']
  app.post(
    '/',
    {
      schema: {
        operationId: 'signInAdmin',
        tags,
        summary: 'Sign in to the console: an admin name and token for a session cookie',
        security: [],
        body: AdminSignInBody,
        response: {
          201: AdminSession,
          ...errorResponses('VALIDATION_ERROR', 'ADMIN_AUTH_REQUIRED', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request, reply) => {
      const actor = app.adminByToken(request.body.token)
      const matched = actor !== undefined && actor === request.body.name
      await app.authFailureLimits.admin.guard(request, !matched)
      if (!matched) throw new AppError('ADMIN_AUTH_REQUIRED', 'That admin name and token do not match')
      const { id, session } = await app.consoleSessions.create('admin', actor)
      app.setSessionCookie(reply, 'admin', id)
      request.log.info({ actor }, 'console session started')
      return reply.code(201).send(adminView(session))
    },
  )

  app.get(
    '/',
    {
      schema: {
        operationId: 'getAdminSession',
        tags,
        summary: 'The console session this browser holds, with its CSRF token',
        security: [{ consoleSession: [] }],
        response: { 200: AdminSession, ...errorResponses('ADMIN_AUTH_REQUIRED', 'SERVICE_UNAVAILABLE') },
      },
    },
    async (request) => adminView(await sessionOrRefusal(app, request, 'admin')),
  )

  app.delete(
    '/',
    {
      schema: {
        operationId: 'signOutAdmin',
        tags,
        summary: 'Sign out of the console: the session ends on every tab',
        security: [{ consoleSession: [] }],
        response: {
          204: { type: 'null', description: 'Signed out' },
          ...errorResponses('ADMIN_AUTH_REQUIRED', 'CSRF_TOKEN_INVALID', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request, reply) => {
      const session = await sessionOrRefusal(app, request, 'admin')
      await app.endSession(request, reply, 'admin')
      request.log.info({ actor: session.actor }, 'console session ended')
      return reply.code(204).send(null)
    },
  )
}

/**
 * `POST /api/admin/sessions/revoke`: ends every console session of an admin, on every instance (a
 * lost laptop, a token about to be rotated). Any admin may do it, to anyone, as with every admin
 * action; audited under the acting admin's name.
 */
export const adminSessionRevokeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps
  app.addHook('onRequest', app.requireAdmin)
  app.post(
    '/revoke',
    {
      schema: {
        operationId: 'revokeAdminSessions',
        tags: ['console'],
        summary: 'End every console session of an admin',
        description:
          'The admin’s sessions end at once on every instance; its token still works until it leaves ' +
          '`ADMIN_TOKENS`. Audited (`sessions.revoke`) with the acting admin as actor.',
        security: [{ adminToken: [] }, { consoleSession: [] }],
        body: AdminSessionsRevokeBody,
        response: {
          200: AdminSessionsRevoked,
          ...errorResponses(
            'VALIDATION_ERROR',
            'ADMIN_AUTH_REQUIRED',
            'CSRF_TOKEN_INVALID',
            'RATE_LIMITED',
            'SERVICE_UNAVAILABLE',
          ),
        },
      },
    },
    async (request) => {
      const { admin } = request.body
      let ended: number
      try {
        ended = await app.consoleSessions.endAllOf(admin)
      } catch (error) {
        request.log.error({ err: error }, 'console sessions not revoked')
        throw unavailable('end the sessions')
      }
      await recordAdminAction(db, {
        actor: request.adminName,
        action: 'sessions.revoke',
        targetType: 'admin',
        targetId: admin,
        details: { ended },
      })
      request.log.info({ actor: request.adminName, admin, ended }, 'console sessions revoked')
      return { admin, ended }
    },
  )
}

/**
 * `/api/third-party/session`: a key exchanged for the portal's session cookie. The session holds
 * the key's hash, never the key; every request looks the key up again, so a revoked key's session
 * stops working at once. An invalid key counts against the key failure limit.
 */
export const portalSessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tags = ['console']
  const view = (
    session: StoredSession,
    key: { id: string; clientName: string; scopes: string[]; tenantId: string | null },
  ): PortalSession => ({
    kind: 'portal',
    actor: session.actor,
    csrfToken: session.csrfToken,
    expiresAt: session.expiresAt,
    keyId: key.id,
    clientName: key.clientName,
    scopes: key.scopes,
    tenantId: key.tenantId,
  })

  app.post(
    '/',
    {
      schema: {
        operationId: 'signInPortal',
        tags,
        summary: 'Sign in to the portal: an API key for a session cookie (the key is not kept)',
        security: [],
        body: PortalSignInBody,
        response: {
          201: PortalSession,
          ...errorResponses(
            'VALIDATION_ERROR',
            'API_KEY_INVALID',
            'API_KEY_NOT_ACTIVE',
            'RATE_LIMITED',
            'SERVICE_UNAVAILABLE',
          ),
        },
      },
    },
    async (request, reply) => {
      const key = await app.apiKeyOf(request, request.body.apiKey)
      const { id, session } = await app.consoleSessions.create(
        'portal',
        key.id,
        hashApiKey(request.body.apiKey),
      )
      app.setSessionCookie(reply, 'portal', id)
      request.log.info({ apiKeyId: key.id }, 'portal session started')
      return reply.code(201).send(view(session, key))
    },
  )

  app.get(
    '/',
    {
      onRequest: app.requireApiKey(),
      schema: {
        operationId: 'getPortalSession',
        tags,
        summary: 'The portal session this browser holds, with its CSRF token',
        security: [{ portalSession: [] }],
        response: {
          200: PortalSession,
          ...errorResponses(
            'API_KEY_MISSING',
            'API_KEY_INVALID',
            'API_KEY_NOT_ACTIVE',
            'SERVICE_UNAVAILABLE',
          ),
        },
      },
    },
    async (request) => {
      const session = request.consoleSession
      if (!session) throw ended('portal')
      return view(session, request.apiKey)
    },
  )

  app.delete(
    '/',
    {
      schema: {
        operationId: 'signOutPortal',
        tags,
        summary: 'Sign out of the portal',
        security: [{ portalSession: [] }],
        response: {
          204: { type: 'null', description: 'Signed out' },
          ...errorResponses(
            'API_KEY_MISSING',
            'API_KEY_INVALID',
            'CSRF_TOKEN_INVALID',
            'SERVICE_UNAVAILABLE',
          ),
        },
      },
    },
    async (request, reply) => {
      // Signing out needs the session, not a live key: a revoked key's holder can still sign out.
      const session = await sessionOrRefusal(app, request, 'portal')
      await app.endSession(request, reply, 'portal')
      request.log.info({ apiKeyId: session.actor }, 'portal session ended')
      return reply.code(204).send(null)
    },
  )
}
