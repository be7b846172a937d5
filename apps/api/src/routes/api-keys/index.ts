import { ApiKeyCreated, ApiKeyRequestBody, ApiKeySelf } from '@dispatch/contracts'
import { generateApiKey, insertApiKey } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../http/error-responses.ts'
import { toApiKeySelf } from '../../views.ts'
import { authenticate, NO_SCOPE } from '../authenticate.ts'

/** `/api/api-keys`: a key requested (open to anyone) and read back by itself. */
export const apiKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  authenticate(app, 'api-key')
  const { config, db, clock } = app.deps

  app.post(
    '/request',
    {
      config: {
        // Open to anyone, limited by address.
        public: true,
        rateLimit: { max: config.KEY_REQUEST_RATE_MAX, timeWindow: config.KEY_REQUEST_RATE_WINDOW_MS },
      },
      schema: {
        operationId: 'requestApiKey',
        tags: ['api-keys'],
        summary: 'Request an API key',
        // Anyone may ask; the key works only once an admin approves it.
        security: [],
        description:
          'The key is returned once, in this answer, and works only after an admin approves it. ' +
          '`tenantId` here is only a request (answered as `requestedTenantId`); the key reads a ' +
          "tenant's data only once an admin binds one at approval.",
        body: ApiKeyRequestBody,
        response: {
          201: ApiKeyCreated,
          ...errorResponses(
            'VALIDATION_ERROR',
            'PAYLOAD_TOO_LARGE',
            'UNSUPPORTED_MEDIA_TYPE',
            'RATE_LIMITED',
          ),
        },
      },
    },
    async (request, reply) => {
      const { key, keyHash, keyPrefix } = generateApiKey(config.APP_ENV)
      const row = await insertApiKey(db, {
        keyHash,
        keyPrefix,
        environment: config.APP_ENV,
        clientName: request.body.clientName,
        email: request.body.email,
        scopes: request.body.scopes,
        requestedTenantId: request.body.tenantId ?? null,
        createdAt: clock(),
      })
      request.log.info({ apiKeyId: row.id, keyPrefix }, 'api key requested')
      return reply.code(201).send({
        id: row.id,
        key,
        status: 'pending' as const,
        clientName: row.clientName,
        email: row.email,
        scopes: row.scopes,
        tenantId: null,
        requestedTenantId: row.requestedTenantId,
        createdAt: row.createdAt.toISOString(),
      })
    },
  )

  app.get(
    '/me',
    {
      config: { scope: NO_SCOPE },
      schema: {
        operationId: 'getOwnApiKey',
        tags: ['api-keys'],
        summary: "The calling API key, with its limits and today's usage",
        description:
          '`usage.today` counts the messages sent since midnight UTC against the key (a batch counts ' +
          'its messages), with or without a `dailyQuota`; it reads 0 while Redis is unreachable.',
        response: { 200: ApiKeySelf },
      },
    },
    async (request) =>
      toApiKeySelf(
        request.apiKey,
        await app.messageUsageToday(request.apiKey.id, request.log),
        config.MESSAGE_RATE_PER_SECOND,
      ),
  )
}
