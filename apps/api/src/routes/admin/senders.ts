import { randomUUID } from 'node:crypto'
import {
  type ConsentKeywords,
  type ContentRetention,
  CreateSenderBody,
  DEFAULT_SENDER_ID,
  foldConsentKeywords,
  pageMeta,
  retentionHours,
  SenderIdParams,
  SenderList,
  SenderListQuery,
  SenderView,
  senderQueueName,
  UpdateSenderBody,
} from '@dispatch/contracts'
import {
  countKeysBoundToSender,
  deleteSenderIfUnbound,
  findSender,
  insertSender,
  isUuid,
  listSenders,
  SenderExists,
  type SenderRow,
  updateSender,
} from '@dispatch/db'
import { bullQueueKey, createSecretBox, type KeyLayout, lastFour } from '@dispatch/runtime'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { publishSenderChange } from '../../sender-changes.ts'
import { readSenderReach, toSenderView } from '../../senders/views.ts'

const boundKeys = (count: number) =>
  new AppError(
    'SENDER_IN_USE',
    `${count === 1 ? 'An API key is' : `${count} API keys are`} bound to this sender; bind them to another sender (or to none) first`,
  )
const notFound = (id: string) => new AppError('NOT_FOUND', `No sender with id ${JSON.stringify(id)}`)
/** `default` or a UUID; anything else names no sender: 404, never a database error. */
const checkId = (id: string) => {
  if (id === DEFAULT_SENDER_ID) return id
  if (!isUuid(id)) throw notFound(id)
  return id.toLowerCase()
}

/** The default sender's token, number and name come from `WHATSAPP_*`; only these are an admin's. */
const DEFAULT_SENDER_FIELDS = new Set([
  'state',
  'ratePerSecond',
  'displayPhoneNumber',
  'wabaId',
  'serviceWindowPolicy',
  'marketingCap',
  'consentKeywords',
  'consentConfirmation',
  'defaultFallback',
  'inboundContentRetention',
  'businessId',
  'messagingLimitPolicy',
  'messagingLimitOverride',
])

/** Replies' content retention as stored (hours: null retain, 0 discard), when the body sets it. */
const storedRetention = (value: ContentRetention | undefined) =>
  value === undefined ? {} : { inboundContentRetentionHours: retentionHours(value) }

/**
 * The body's keyword lists as stored: folded as replies are matched, duplicates dropped; 400 naming
 * the word that folds to nothing (or too long), or that is in both lists.
 */
function foldedKeywords<T extends { consentKeywords?: ConsentKeywords | null | undefined }>(body: T): T {
  if (!body.consentKeywords) return body
  const folded = foldConsentKeywords(body.consentKeywords, 'body.consentKeywords')
  if (typeof folded === 'string') throw new AppError('VALIDATION_ERROR', folded)
  return { ...body, consentKeywords: folded }
}

/**
 * Messages still on their way through a sender: waiting for admission (fair queue), or admitted to
 * its BullMQ queue and not finished (waiting, delivering, retrying later).
 */
async function messagesInFlight(redis: RedisClient, layout: KeyLayout, senderId: string): Promise<number> {
  const fair = fairKeys(layout.QUEUE_PREFIX, senderId)
  const key = (state: string) => bullQueueKey(layout, senderQueueName(senderId), state)
  const counts = await Promise.all([
    redis.hlen(fair.jobs),
    redis.zcard(fair.scheduled),
    redis.hlen(fair.moving),
    ...['wait', 'paused', 'active'].map((state) => redis.llen(key(state))),
    ...['prioritized', 'delayed'].map((state) => redis.zcard(key(state))),
  ])
  return counts.reduce((sum, n) => sum + n, 0)
}

const errors = errorResponses('NOT_FOUND', 'VALIDATION_ERROR')
const security = [{ adminToken: [] }]
const tags = ['admin']

/**
 * Admins manage the WhatsApp numbers messages go out through. Tokens are sealed with the secret
 * box before they are stored and are never answered or logged; every change is published so
 * running workers reconcile at once.
 */
export const adminSenderRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock, config, redis } = app.deps
  // Built at boot: a production API without SECRETS_KEY (or with a malformed one) does not start.
  const box = createSecretBox(config)
  const viewOf = async (row: SenderRow) => {
    const [reach] = await readSenderReach(redis, config.QUEUE_PREFIX, [row], clock().getTime())
    return toSenderView(row, reach)
  }

  app.post(
    '/',
    {
      schema: {
        operationId: 'createSender',
        tags,
        summary: 'Add a sender number, with its Graph API token (write-only)',
        security,
        body: CreateSenderBody,
        response: { 201: SenderView, ...errors, ...errorResponses('SENDER_EXISTS') },
      },
    },
    async (request, reply) => {
      const { accessToken, inboundContentRetention, ...body } = foldedKeywords(request.body)
      let row: SenderRow
      try {
        row = await insertSender(db, {
          ...body,
          ...storedRetention(inboundContentRetention),
          id: randomUUID(),
          displayPhoneNumber: body.displayPhoneNumber ?? null,
          accessTokenCiphertext: box.seal(accessToken),
          accessTokenLast4: lastFour(accessToken),
          now: clock(),
        })
      } catch (error) {
        if (error instanceof SenderExists) throw new AppError('SENDER_EXISTS', error.message)
        throw error
      }
      request.log.info({ senderId: row.id, actor: request.adminName }, 'sender created')
      await publishSenderChange(app.deps, request.log, row.id)
      await app.sending.rules.reload(row.id)
      return reply.code(201).send(await viewOf(row))
    },
  )

  app.get(
    '/',
    {
      schema: {
        operationId: 'listSenders',
        tags,
        summary: 'List senders (the environment’s `default` among them once a worker has started)',
        security,
        querystring: SenderListQuery,
        response: { 200: SenderList, ...errorResponses('VALIDATION_ERROR') },
      },
    },
    async (request) => {
      const { rows, itemCount } = await listSenders(db, request.query)
      const reach = await readSenderReach(redis, config.QUEUE_PREFIX, rows, clock().getTime())
      return {
        ...pageMeta(request.query.page, request.query.take, itemCount),
        data: rows.map((row, i) => toSenderView(row, reach[i])),
      }
    },
  )

  app.get(
    '/:id',
    {
      schema: {
        operationId: 'getSender',
        tags,
        summary: 'One sender',
        security,
        params: SenderIdParams,
        response: { 200: SenderView, ...errors },
      },
    },
    async (request) => {
      const id = checkId(request.params.id)
      const row = await findSender(db, id)
      if (!row) throw notFound(id)
      return viewOf(row)
    },
  )

  app.patch(
    '/:id',
    {
      schema: {
        operationId: 'updateSender',
        tags,
        summary: 'Change a sender (only the fields given); `state: active` resumes one that needs attention',
        security,
        params: SenderIdParams,
        body: UpdateSenderBody,
        response: { 200: SenderView, ...errors },
      },
    },
    async (request) => {
      const id = checkId(request.params.id)
      const { accessToken, inboundContentRetention, ...changes } = foldedKeywords(request.body)
      if (id === DEFAULT_SENDER_ID) {
        const managed = Object.keys(request.body).find((field) => !DEFAULT_SENDER_FIELDS.has(field))
        if (managed) {
          throw new AppError(
            'VALIDATION_ERROR',
            `body.${managed} cannot be changed on the default sender: it is managed by the environment (WHATSAPP_*)`,
          )
        }
      }
      const row = await updateSender(
        db,
        id,
        {
          ...changes,
          ...storedRetention(inboundContentRetention),
          ...(accessToken === undefined
            ? {}
            : { accessTokenCiphertext: box.seal(accessToken), accessTokenLast4: lastFour(accessToken) }),
          pausedBy: request.adminName,
        },
        clock(),
      )
      if (!row) throw notFound(id)
      request.log.info(
        { senderId: id, fields: Object.keys(request.body), actor: request.adminName },
        'sender updated',
      )
      await publishSenderChange(app.deps, request.log, id)
      // Its window policy and account are checked by sends here at once; elsewhere on the announcement.
      await app.sending.rules.reload(id)
      return viewOf(row)
    },
  )

  app.delete(
    '/:id',
    {
      schema: {
        operationId: 'deleteSender',
        tags,
        summary: 'Remove a sender no API key uses and no message waits for',
        security,
        params: SenderIdParams,
        response: {
          204: { type: 'null', description: 'Deleted' },
          ...errors,
          ...errorResponses('SENDER_IN_USE'),
        },
      },
    },
    async (request, reply) => {
      const id = checkId(request.params.id)
      if (id === DEFAULT_SENDER_ID) {
        throw new AppError(
          'SENDER_IN_USE',
          'The default sender cannot be deleted: it is the environment’s (WHATSAPP_*), used by every key without a sender of its own',
        )
      }
      if (!(await findSender(db, id))) throw notFound(id)
      const bound = await countKeysBoundToSender(db, id)
      if (bound > 0) throw boundKeys(bound)
      // A sender no key is bound to receives no new messages, so what waits now is all that will.
      const waiting = await messagesInFlight(redis, config, id)
      if (waiting > 0) {
        throw new AppError(
          'SENDER_IN_USE',
          `${waiting} message${waiting === 1 ? ' is' : 's are'} still on the way through this sender`,
        )
      }
      // The delete checks the keys again, in the same statement: one may have been bound meanwhile.
      const outcome = await deleteSenderIfUnbound(db, id)
      if (outcome === 'not_found') throw notFound(id)
      if (outcome === 'in_use') throw boundKeys(1)
      request.log.info({ senderId: id, actor: request.adminName }, 'sender deleted')
      await publishSenderChange(app.deps, request.log, id)
      return reply.code(204).send(null)
    },
  )
}
