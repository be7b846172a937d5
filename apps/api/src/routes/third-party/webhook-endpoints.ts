import { randomBytes } from 'node:crypto'
import {
  CreateWebhookEndpointBody,
  pageMeta,
  Scopes,
  UpdateWebhookEndpointBody,
  type WebhookEndpointEvents,
  WebhookEndpointIdParams,
  WebhookEndpointList,
  WebhookEndpointListQuery,
  WebhookEndpointView,
  WebhookEndpointWithSecret,
} from '@dispatch/contracts'
import { isUuid, owned, type WebhookEndpointRow } from '@dispatch/db'
import { createSecretBox } from '@dispatch/runtime'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { AppError } from '../../errors.ts'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { checkWebhookTarget } from '../../webhook-targets.ts'

/** How long the secret a rotation replaces keeps signing beside the new one. */
const PREVIOUS_SECRET_TTL_MS = 24 * 3600 * 1000

/** A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes. */
const newSigningSecret = () => `whsec_${randomBytes(32).toString('base64')}`

const toView = (row: WebhookEndpointRow): WebhookEndpointView => ({
  id: row.id,
  url: row.url,
  events: row.events as WebhookEndpointEvents,
  description: row.description,
  enabled: row.enabled,
  disabledReason: row.disabledReason as WebhookEndpointView['disabledReason'],
  failingSince: row.failingSince?.toISOString() ?? null,
  previousSecretExpiresAt: row.previousSecretExpiresAt?.toISOString() ?? null,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
})

export const notFound = (id: string) =>
  new AppError('NOT_FOUND', `No webhook endpoint with id ${JSON.stringify(id)}`)
/** A malformed id names no endpoint: 404, the same as an unknown one or another key's. */
export const checkId = (id: string) => {
  if (!isUuid(id)) throw notFound(id)
  return id.toLowerCase()
}

const tags = ['webhooks']
export const oneErrors = errorResponses('NOT_FOUND')
const description =
  'Requires the `manage:webhooks` scope. A key sees and changes only its own endpoints; ' +
  "another key's endpoint is a 404."

/** A key's webhook endpoints: where its delivery reports will go (delivery itself comes later). */
export const webhookEndpointRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock, config } = app.deps
  /** The key's own endpoints: every read and change goes through the owned layer. */
  const webhooksOf = (request: FastifyRequest) => owned(db, callerOf(request)).webhooks
  // Signing secrets are stored sealed under SECRETS_KEY; only the answer that issues one shows it.
  const box = createSecretBox(config)
  const access = { scope: Scopes.manageWebhooks }
  const targetRules = {
    production: config.APP_ENV === 'production',
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
  }

  app.post(
    '/webhook-endpoints',
    {
      config: access,
      schema: {
        operationId: 'createWebhookEndpoint',
        tags,
        summary: 'Register a webhook endpoint; its signing secret is shown in this answer only',
        description:
          `${description} A key has at most ${config.WEBHOOK_ENDPOINTS_PER_KEY_MAX} endpoints ` +
          '(`WEBHOOK_ENDPOINTS_PER_KEY_MAX`); one more is `409 LIMIT_EXCEEDED`.',
        body: CreateWebhookEndpointBody,
        response: {
          201: WebhookEndpointWithSecret,
          ...errorResponses('VALIDATION_ERROR', 'LIMIT_EXCEEDED'),
        },
      },
    },
    async (request, reply) => {
      const { url, events, description: text } = request.body
      await checkWebhookTarget(url, targetRules)
      const secret = newSigningSecret()
      const max = config.WEBHOOK_ENDPOINTS_PER_KEY_MAX
      const row = await webhooksOf(request).create(
        { url, events, description: text ?? null, secret: box.seal(secret), now: clock() },
        max,
      )
      if (!row) {
        throw new AppError(
          'LIMIT_EXCEEDED',
          `The API key has ${max} webhook endpoints, its bound; delete one, or send several event types to one endpoint`,
        )
      }
      request.log.info({ webhookEndpointId: row.id }, 'webhook endpoint registered')
      return reply.code(201).send({ ...toView(row), secret })
    },
  )

  app.get(
    '/webhook-endpoints',
    {
      config: access,
      schema: {
        operationId: 'listWebhookEndpoints',
        tags,
        summary: "The key's webhook endpoints",
        description,
        querystring: WebhookEndpointListQuery,
        response: { 200: WebhookEndpointList, ...errorResponses('VALIDATION_ERROR') },
      },
    },
    async (request) => {
      const { rows, itemCount } = await webhooksOf(request).list(request.query)
      return { ...pageMeta(request.query.page, request.query.take, itemCount), data: rows.map(toView) }
    },
  )

  app.get(
    '/webhook-endpoints/:id',
    {
      config: access,
      schema: {
        operationId: 'getWebhookEndpoint',
        tags,
        summary: 'One webhook endpoint (never its secret)',
        description,
        params: WebhookEndpointIdParams,
        response: { 200: WebhookEndpointView, ...oneErrors },
      },
    },
    async (request) => {
      const id = checkId(request.params.id)
      const row = await webhooksOf(request).find(id)
      if (!row) throw notFound(id)
      return toView(row)
    },
  )

  app.patch(
    '/webhook-endpoints/:id',
    {
      config: access,
      schema: {
        operationId: 'updateWebhookEndpoint',
        tags,
        summary: "Change an endpoint's url, events or enabled",
        description,
        params: WebhookEndpointIdParams,
        body: UpdateWebhookEndpointBody,
        response: { 200: WebhookEndpointView, ...oneErrors, ...errorResponses('VALIDATION_ERROR') },
      },
    },
    async (request) => {
      const id = checkId(request.params.id)
      if (!(await webhooksOf(request).find(id))) throw notFound(id)
      if (request.body.url !== undefined) await checkWebhookTarget(request.body.url, targetRules)
      const row = await webhooksOf(request).update(id, request.body, clock())
      if (!row) throw notFound(id)
      return toView(row)
    },
  )

  app.delete(
    '/webhook-endpoints/:id',
    {
      config: access,
      schema: {
        operationId: 'deleteWebhookEndpoint',
        tags,
        summary: 'Delete a webhook endpoint',
        description,
        params: WebhookEndpointIdParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...oneErrors },
      },
    },
    async (request, reply) => {
      const id = checkId(request.params.id)
      if (!(await webhooksOf(request).remove(id))) throw notFound(id)
      request.log.info({ webhookEndpointId: id }, 'webhook endpoint deleted')
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/webhook-endpoints/:id/rotate-secret',
    {
      config: access,
      schema: {
        operationId: 'rotateWebhookEndpointSecret',
        tags,
        summary: 'A new signing secret, shown once; the old one keeps signing for 24 hours',
        description,
        params: WebhookEndpointIdParams,
        response: { 200: WebhookEndpointWithSecret, ...oneErrors },
      },
    },
    async (request) => {
      const id = checkId(request.params.id)
      const now = clock()
      const secret = newSigningSecret()
      const expiresAt = new Date(now.getTime() + PREVIOUS_SECRET_TTL_MS)
      const row = await webhooksOf(request).rotateSecret(id, box.seal(secret), expiresAt, now)
      if (!row) throw notFound(id)
      request.log.info({ webhookEndpointId: id }, 'webhook endpoint secret rotated')
      return { ...toView(row), secret }
    },
  )
}
