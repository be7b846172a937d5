import {
  Scopes,
  SendExampleEventAnswer,
  SendExampleEventBody,
  WebhookEndpointIdParams,
  WebhookEventTypeList,
  webhookEventCatalog,
  webhookEventExample,
} from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { countManualRetry, requireEnabled } from './webhook-deliveries.ts'
import { checkId, notFound } from './webhook-endpoints.ts'

const tags = ['webhooks']
/** Built once: the catalog is the contracts', the same for every key. */
const catalog = { data: webhookEventCatalog() }

/**
 * The event catalog, and an example of any type sent to one of the key's endpoints (Svix's App
 * Portal has both): a receiver can be built, and tested, before any real event happens.
 */
export const webhookExampleRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock, redis, config } = app.deps
  const access = { scope: Scopes.manageWebhooks }
  const spendManualRetry = countManualRetry(redis, config)

  app.get(
    '/webhook-event-types',
    {
      config: access,
      schema: {
        operationId: 'listWebhookEventTypes',
        tags,
        summary: 'Every event type an endpoint can subscribe to: what it means, its schema, an example',
        description:
          'Requires the `manage:webhooks` scope. The catalog is the same for every key: each type with ' +
          'its description, the JSON Schema of its `data`, and an example body (marked `"example": true`, ' +
          'as the examples `POST /webhook-endpoints/:id/send-example` sends are).',
        response: { 200: WebhookEventTypeList },
      },
    },
    async () => catalog,
  )

  app.post(
    '/webhook-endpoints/:id/send-example',
    {
      config: access,
      schema: {
        operationId: 'sendExampleWebhookEvent',
        tags,
        summary: 'Send an example event of a type to this endpoint, signed and delivered as real ones',
        description:
          "Requires the `manage:webhooks` scope; only to the key's own endpoints (another key's is a 404). " +
          'The example goes through the outbox as every event does, to this endpoint only (whatever types ' +
          'it subscribes to), signed with its secret, retried on failure; its attempts are listed with the ' +
          'endpoint\'s others. Its body carries `"example": true` and the catalog\'s example data. It counts ' +
          `against the endpoint's ${config.WEBHOOK_MANUAL_RETRIES_PER_HOUR} manual sends an hour ` +
          '(`WEBHOOK_MANUAL_RETRIES_PER_HOUR`, shared with retries): past it `429 RATE_LIMITED`.',
        params: WebhookEndpointIdParams,
        body: SendExampleEventBody,
        response: {
          202: SendExampleEventAnswer,
          ...errorResponses('NOT_FOUND', 'VALIDATION_ERROR', 'INVALID_STATE_TRANSITION', 'RATE_LIMITED'),
        },
      },
    },
    async (request, reply) => {
      const webhooks = owned(db, callerOf(request)).webhooks
      const id = checkId(request.params.id)
      const endpoint = await webhooks.find(id)
      if (!endpoint) throw notFound(id)
      requireEnabled(endpoint)
      await spendManualRetry(endpoint.id)
      const { eventType } = request.body
      const now = clock()
      const eventId = await webhooks.sendExample(
        endpoint,
        eventType,
        webhookEventExample(eventType, now.toISOString()),
        now,
      )
      if (!eventId) throw notFound(id)
      request.log.info({ webhookEndpointId: endpoint.id, eventId, eventType }, 'webhook example queued')
      return reply.code(202).send({ eventId, endpointId: endpoint.id, eventType })
    },
  )
}
