import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import {
  pageMeta,
  Scopes,
  WEBHOOK_JOB_OPTIONS,
  WebhookAttemptList,
  WebhookAttemptListQuery,
  type WebhookAttemptView,
  WebhookEndpointIdParams,
  WebhookEventParams,
  WebhookEventView,
  type WebhookJob,
  WebhookReplayAnswer,
  WebhookReplayBody,
  WebhookRetryAnswer,
  webhookEventBody,
  webhookJobId,
} from '@dispatch/contracts'
import { owned, type WebhookAttemptRow, type WebhookEndpointRow } from '@dispatch/db'
import { luaScripts, scriptCall } from '@dispatch/runtime/lua-scripts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { AppError } from '../../errors.ts'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { checkId, notFound, oneErrors } from './webhook-endpoints.ts'

/** Events are replayed in pages of this many, each page one `addBulk`. */
const REPLAY_PAGE = 1000
/** A replay not ended after this long (its instance died) no longer counts against its key. */
const REPLAY_STALE_MS = 10 * 60 * 1000
/** How long a replay refused at the key's bound is told to wait. */
const REPLAY_RETRY_AFTER_SECONDS = 5

/**
 * Manual retries counted per endpoint in an hour's window, and replays running per key
 * (lua/spendWebhookManualRetry-1.lua, lua/startWebhookReplay-1.lua).
 */
const scripts = luaScripts(join(import.meta.dirname, 'lua'), [
  'spendWebhookManualRetry',
  'startWebhookReplay',
])

const HOUR_MS = 3_600_000

const toView = ({ attempt: a, eventType }: { attempt: WebhookAttemptRow; eventType: string }) =>
  ({
    id: String(a.id),
    eventId: a.eventId,
    eventType,
    attempt: a.attempt,
    success: a.statusCode !== null && a.statusCode >= 200 && a.statusCode < 300,
    statusCode: a.statusCode,
    durationMs: a.durationMs,
    responseExcerpt: a.responseExcerpt,
    error: a.error,
    nextRetryAt: a.nextRetryAt?.toISOString() ?? null,
    createdAt: a.createdAt.toISOString(),
  }) satisfies WebhookAttemptView

const tags = ['webhooks']
const keyErrors = oneErrors
const description =
  'Requires the `manage:webhooks` scope. A key sees only its own endpoints and events; ' +
  "another key's are a 404."

/** A disabled endpoint gets nothing: retrying or replaying to it would only be dropped. */
export function requireEnabled(endpoint: WebhookEndpointRow) {
  if (!endpoint.enabled) {
    throw new AppError(
      'INVALID_STATE_TRANSITION',
      'The webhook endpoint is disabled: enable it (PATCH {"enabled": true}) first',
    )
  }
}

/**
 * Counts a manual send (a retry, an example) against its endpoint's hour; `429 RATE_LIMITED` past
 * `WEBHOOK_MANUAL_RETRIES_PER_HOUR`. The hash tag keeps the script's one key on a slot of its own
 * endpoint, should Redis be a cluster.
 */
export function countManualRetry(
  redis: Parameters<typeof scriptCall>[0],
  config: { QUEUE_PREFIX: string; WEBHOOK_MANUAL_RETRIES_PER_HOUR: number },
) {
  const spend = scriptCall(redis, scripts.spendWebhookManualRetry)
  return async (endpointId: string) => {
    const max = config.WEBHOOK_MANUAL_RETRIES_PER_HOUR
    const key = `${config.QUEUE_PREFIX}:webhook-retries:{${endpointId}}`
    const left = Number(await spend(key, max, HOUR_MS))
    if (left > 0) {
      throw new AppError(
        'RATE_LIMITED',
        `This endpoint has had ${max} manual retries this hour (examples sent included), its bound; replay a window instead, or retry later`,
        { 'retry-after': String(Math.max(1, Math.ceil(left / 1000))) },
      )
    }
  }
}

/** What a sender does about its deliveries: see every attempt, send one event again, replay a window. */
export const webhookDeliveryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock, webhookQueue, redis, config } = app.deps
  const access = { scope: Scopes.manageWebhooks }
  const startReplay = scriptCall(redis, scripts.startWebhookReplay)
  // A hash tag keeps the script's one key on a slot of its own owner, should Redis be a cluster.
  const replaysKey = (apiKeyId: string) => `${config.QUEUE_PREFIX}:webhook-replays:{${apiKeyId}}`

  const spendManualRetry = countManualRetry(redis, config)

  const webhooksOf = (request: FastifyRequest) => owned(db, callerOf(request)).webhooks
  const ownEndpoint = async (request: FastifyRequest, rawId: string) => {
    const id = checkId(rawId)
    const endpoint = await webhooksOf(request).find(id)
    if (!endpoint) throw notFound(id)
    return endpoint
  }

  app.get(
    '/webhook-endpoints/:id/attempts',
    {
      config: access,
      schema: {
        operationId: 'listWebhookAttempts',
        tags,
        summary: 'Every delivery attempt to an endpoint, newest first',
        description: `${description} Filter by \`eventId\` or by \`success\`.`,
        params: WebhookEndpointIdParams,
        querystring: WebhookAttemptListQuery,
        response: { 200: WebhookAttemptList, ...keyErrors, ...errorResponses('VALIDATION_ERROR') },
      },
    },
    async (request) => {
      const endpoint = await ownEndpoint(request, request.params.id)
      const { rows, itemCount } = await webhooksOf(request).attempts(endpoint, request.query)
      return { ...pageMeta(request.query.page, request.query.take, itemCount), data: rows.map(toView) }
    },
  )

  app.get(
    '/webhook-endpoints/:id/events/:eventId',
    {
      config: access,
      schema: {
        operationId: 'getWebhookEvent',
        tags,
        summary: 'One event as its deliveries to this endpoint send it: the exact body signed',
        description,
        params: WebhookEventParams,
        response: { 200: WebhookEventView, ...keyErrors },
      },
    },
    async (request) => {
      await ownEndpoint(request, request.params.id)
      const event = await webhooksOf(request).event(request.params.eventId)
      if (!event) {
        throw new AppError('NOT_FOUND', `No webhook event with id ${JSON.stringify(request.params.eventId)}`)
      }
      return {
        id: event.id,
        type: event.type,
        createdAt: event.createdAt.toISOString(),
        body: webhookEventBody(event.payload),
      }
    },
  )

  app.post(
    '/webhook-endpoints/:id/events/:eventId/retry',
    {
      config: access,
      schema: {
        operationId: 'retryWebhookEvent',
        tags,
        summary: 'Send one event to this endpoint again, now (same webhook-id, new attempts)',
        description,
        params: WebhookEventParams,
        response: {
          202: WebhookRetryAnswer,
          ...keyErrors,
          ...errorResponses('INVALID_STATE_TRANSITION', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request, reply) => {
      const endpoint = await ownEndpoint(request, request.params.id)
      const event = await webhooksOf(request).event(request.params.eventId)
      if (!event) {
        throw new AppError('NOT_FOUND', `No webhook event with id ${JSON.stringify(request.params.eventId)}`)
      }
      requireEnabled(endpoint)
      await spendManualRetry(endpoint.id)
      const data: WebhookJob = {
        eventId: event.id,
        endpointId: endpoint.id,
        eventType: event.type,
        body: webhookEventBody(event.payload),
        reason: 'retry',
      }
      await (await webhookQueue.get()).add(event.type, data, {
        ...WEBHOOK_JOB_OPTIONS,
        jobId: webhookJobId(event.id, endpoint.id, `retry-${randomUUID()}`),
      })
      request.log.info({ webhookEndpointId: endpoint.id, eventId: event.id }, 'webhook event retry queued')
      return reply.code(202).send({ eventId: event.id, endpointId: endpoint.id })
    },
  )

  app.post(
    '/webhook-endpoints/:id/replay',
    {
      config: access,
      schema: {
        operationId: 'replayWebhookEvents',
        tags,
        summary: 'Send again every event since a time (to `until`, default now) this endpoint subscribes to',
        description:
          `${description} A replay reaches back at most ${config.WEBHOOK_REPLAY_WINDOW_HOURS} hours ` +
          `(\`WEBHOOK_REPLAY_WINDOW_HOURS\`), and a key runs at most ${config.WEBHOOK_REPLAYS_PER_KEY_MAX} at once ` +
          '(`429 RATE_LIMITED` past it). Each replayed event keeps its webhook-id.',
        params: WebhookEndpointIdParams,
        body: WebhookReplayBody,
        response: {
          202: WebhookReplayAnswer,
          ...keyErrors,
          ...errorResponses(
            'VALIDATION_ERROR',
            'INVALID_STATE_TRANSITION',
            'RATE_LIMITED',
            'SERVICE_UNAVAILABLE',
          ),
        },
      },
    },
    async (request, reply) => {
      const endpoint = await ownEndpoint(request, request.params.id)
      const now = clock()
      const since = new Date(request.body.since)
      const until = request.body.until ? new Date(request.body.until) : now
      if (since.getTime() > now.getTime()) {
        throw new AppError('VALIDATION_ERROR', 'body.since must not be in the future')
      }
      if (until.getTime() <= since.getTime()) {
        throw new AppError('VALIDATION_ERROR', 'body.until must be after body.since')
      }
      const window = config.WEBHOOK_REPLAY_WINDOW_HOURS
      if (since.getTime() < now.getTime() - window * HOUR_MS) {
        throw new AppError(
          'VALIDATION_ERROR',
          `body.since must be within the last ${window} hours (a replay reaches back no further)`,
        )
      }
      requireEnabled(endpoint)
      // One tag per replay: a second replay of the same window queues the events again, while a
      // page added twice within one replay stays one job each.
      const tag = `replay-${randomUUID()}`
      const running = replaysKey(request.apiKey.id)
      const max = config.WEBHOOK_REPLAYS_PER_KEY_MAX
      if (Number(await startReplay(running, max, Date.now(), REPLAY_STALE_MS, tag)) !== 1) {
        throw new AppError(
          'RATE_LIMITED',
          `The API key has ${max} replays running, its bound; retry when one has ended`,
          { 'retry-after': String(REPLAY_RETRY_AFTER_SECONDS) },
        )
      }
      try {
        return reply
          .code(202)
          .send(await replayWindow(webhooksOf(request), endpoint, { since, until, tag }, request.log))
      } finally {
        await redis
          .zrem(running, tag)
          .catch((error) =>
            request.log.warn({ err: error }, 'replay not marked ended: it counts until it is stale'),
          )
      }
    },
  )

  /** Queues every event of the window the endpoint subscribes to, a page at a time. */
  const replayWindow = async (
    webhooks: ReturnType<typeof webhooksOf>,
    endpoint: WebhookEndpointRow,
    { since, until, tag }: { since: Date; until: Date; tag: string },
    log: FastifyBaseLogger,
  ) => {
    const queue = await webhookQueue.get()
    let events = 0
    let cursor: { at: string; id: string } | undefined
    for (;;) {
      const page = await webhooks.eventsBetween({
        types: endpoint.events,
        since,
        until,
        cursor,
        limit: REPLAY_PAGE,
      })
      if (page.length === 0) break
      await queue.addBulk(
        page.map((event) => ({
          name: event.type,
          data: {
            eventId: event.id,
            endpointId: endpoint.id,
            eventType: event.type,
            body: webhookEventBody(event.payload),
            reason: 'replay' as const,
          },
          opts: { ...WEBHOOK_JOB_OPTIONS, jobId: webhookJobId(event.id, endpoint.id, tag) },
        })),
      )
      events += page.length
      const last = page[page.length - 1]
      if (!last || page.length < REPLAY_PAGE) break
      cursor = { at: last.cursorAt, id: last.id }
    }
    log.info({ webhookEndpointId: endpoint.id, events }, 'webhook events replay queued')
    return { events, since: since.toISOString(), until: until.toISOString() }
  }
}
