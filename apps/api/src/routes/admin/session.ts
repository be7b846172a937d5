import {
  AdminSession,
  AdminSessionsRevokeBody,
  AdminSessionsRevoked,
  AdminSignInBody,
} from '@dispatch/contracts'
import { recordAdminAction } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { liveSession } from '../../console/session-auth.ts'
import type { StoredSession } from '../../console/sessions.ts'
import { AppError, unavailable } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'

const adminView = (session: StoredSession, service: AdminSession['service']): AdminSession => ({
  kind: 'admin',
  service,
  actor: session.actor,
  csrfToken: session.csrfToken,
  expiresAt: session.expiresAt,
})

/**
 * `/api/admin/session`: an admin's name and token exchanged for the console's session cookie; the
 * session read back (its CSRF token after a reload) and ended. Wrong credentials count against
 * the admin brute-force limit, as on every admin route.
 */
export const adminSessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tags = ['console']
  const service = { environment: app.deps.config.APP_ENV, platform: app.deps.config.platform }
  app.post(
    '/',
    {
      config: { public: true },
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
      return reply.code(201).send(adminView(session, service))
    },
  )

  app.get(
    '/',
    {
      config: { public: true },
      schema: {
        operationId: 'getAdminSession',
        tags,
        summary: 'The console session this browser holds, with its CSRF token',
        security: [{ consoleSession: [] }],
        response: { 200: AdminSession, ...errorResponses('ADMIN_AUTH_REQUIRED', 'SERVICE_UNAVAILABLE') },
      },
    },
    async (request) => adminView(await liveSession(app, request, 'admin'), service),
  )

  app.delete(
    '/',
    {
      config: { public: true },
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
      const session = await liveSession(app, request, 'admin')
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
          ...errorResponses('VALIDATION_ERROR', 'CSRF_TOKEN_INVALID', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE'),
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
