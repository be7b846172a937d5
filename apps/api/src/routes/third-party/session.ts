import { PortalSession, PortalSignInBody } from '@dispatch/contracts'
import { hashApiKey } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { liveSession, noSession } from '../../console/session-auth.ts'
import type { StoredSession } from '../../console/sessions.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { NO_SCOPE } from '../authenticate.ts'

/**
 * `/api/third-party/session`: a key exchanged for the portal's session cookie. The session holds
 * the key's hash, never the key; every request looks the key up again, so a revoked key's session
 * stops working at once. An invalid key counts against the key failure limit.
 */
export const portalSessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tags = ['console']
  const service = { environment: app.deps.config.APP_ENV, platform: app.deps.config.platform }
  const view = (
    session: StoredSession,
    key: { id: string; clientName: string; scopes: string[]; tenantId: string | null },
  ): PortalSession => ({
    kind: 'portal',
    service,
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
      config: { public: true },
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
      config: { scope: NO_SCOPE },
      schema: {
        operationId: 'getPortalSession',
        tags,
        summary: 'The portal session this browser holds, with its CSRF token',
        security: [{ portalSession: [] }],
        response: {
          200: PortalSession,
          ...errorResponses('SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request) => {
      const session = request.consoleSession
      if (!session) throw noSession('portal')
      return view(session, request.apiKey)
    },
  )

  app.delete(
    '/',
    {
      config: { public: true },
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
      const session = await liveSession(app, request, 'portal')
      await app.endSession(request, reply, 'portal')
      request.log.info({ apiKeyId: session.actor }, 'portal session ended')
      return reply.code(204).send(null)
    },
  )
}
