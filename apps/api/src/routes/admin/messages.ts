import {
  AdminMessageIdParams,
  AdminMessageList,
  AdminMessageListQuery,
  type AdminMessageView,
  AdminMessageView as AdminMessageViewSchema,
  DEFAULT_SENDER_ID,
  type MessageJob,
  pageMeta,
  RetryMessagesBody,
  RetryMessagesResult,
} from '@dispatch/contracts'
import {
  apiKeyClientNames,
  cancelMessageByAdmin,
  findFallbacks,
  findMessageById,
  isUuid,
  listAdminMessages,
  type MessageRow,
  retryFailedMessage,
  retryFailedMessages,
  type Sql,
} from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { AppError, unavailable } from '../../errors.ts'
import { acceptedWindowOf } from '../../http/accepted-window.ts'
import { splitCommaLists } from '../../http/comma-lists.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { retryHooks } from '../../message-retry.ts'
import { takeCancelClaim, tooLate } from '../../sending/cancel-claim.ts'
import { withFallback } from '../../sending/message-fallback-view.ts'
import { toMessageView } from '../../views.ts'

export const toAdminMessageView = (row: MessageRow): AdminMessageView => ({
  ...toMessageView(row),
  apiKeyId: row.apiKeyId,
  retryCount: row.retryCount,
  retriedAt: row.retriedAt?.toISOString() ?? null,
})

const notFound = (id: string) => new AppError('NOT_FOUND', `No message with id ${JSON.stringify(id)}`)

/** The `:id` of a message route, lowercased; one not shaped as a UUID is no message (404). */
function messageIdOf(raw: string): string {
  if (!isUuid(raw)) throw notFound(raw)
  return raw.toLowerCase()
}

const security = [{ adminToken: [] }]
const tags = ['admin']

/** Redis failing inside a retry rolls its transaction back: nothing moved, say so as a 503. */
async function orUnavailable<T>(work: () => Promise<T>, log: { error(o: object, m: string): void }) {
  try {
    return await work()
  } catch (error) {
    if (error instanceof AppError) throw error
    log.error({ err: error }, 'retry failed; rolled back')
    throw unavailable('retry messages')
  }
}

/**
 * Every key's messages for admins, and the retry of failed ones under the same `messageId`
 * (docs/operations.md). The retry is the one move back in the status order, done by its
 * own query in one transaction with its audit rows.
 */
/** A retried message is marketing as its sender's catalog files its template (see SendChecks). */
const marketingJudge =
  (app: FastifyInstance) =>
  (senderId: string, message: MessageJob['message']): boolean =>
    app.sending.checks.isMarketing(senderId, { type: message.type, body: message.body, field: 'body' })

/** What an admin can cancel: a message no worker has taken. */
const CANCELABLE: ReadonlySet<string> = new Set(['scheduled', 'queued'])

export const adminMessageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, lists, clock, config } = app.deps
  const validUntil = (now: Date) => new Date(now.getTime() + config.MESSAGE_VALIDITY_SECONDS * 1000)

  app.get(
    '/',
    {
      preValidation: splitCommaLists('status', 'type', 'fallback'),
      schema: {
        operationId: 'listAllMessages',
        tags,
        summary: "List every key's messages (one envelope with `data`)",
        description:
          'The key list’s paging, order and filters (docs/statuses.md, Listing messages), across every key, ' +
          'plus `apiKeyId`, `senderId` and `errorCode` (the last error code, exact).',
        security,
        querystring: AdminMessageListQuery,
        response: { 200: AdminMessageList, ...errorResponses('VALIDATION_ERROR') },
      },
    },
    async (request) => {
      const { query } = request
      const window = acceptedWindowOf(query.startDate, query.endDate)
      const { rows, itemCount, itemCountExact } = await listAdminMessages(lists, query, window)
      const [names, fallbacks] = await Promise.all([
        apiKeyClientNames(
          lists,
          rows.map((row) => row.apiKeyId),
        ),
        findFallbacks(
          lists.$client as Sql,
          rows.map((row) => row.id),
        ),
      ])
      return {
        ...pageMeta(query.page, query.take, itemCount),
        itemCountExact,
        data: rows.map((row) => ({
          ...withFallback(toAdminMessageView(row), fallbacks.get(row.id), row),
          clientName: names.get(row.apiKeyId),
        })),
      }
    },
  )

  app.post(
    '/:id/retry',
    {
      schema: {
        operationId: 'retryMessage',
        tags,
        summary: 'Send a failed message again, under the same messageId',
        description:
          'Only a `failed` message: it goes back to `queued` (its attempts kept, its retry recorded with the ' +
          'admin as actor) and out again; any other status is 409.',
        security,
        params: AdminMessageIdParams,
        response: {
          200: AdminMessageViewSchema,
          ...errorResponses('NOT_FOUND', 'INVALID_STATE_TRANSITION', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request) => {
      const id = messageIdOf(request.params.id)
      const now = clock()
      const expiresAt = validUntil(now)
      const { hooks, skipped } = retryHooks(app.deps, expiresAt, marketingJudge(app))
      const result = await orUnavailable(
        () => retryFailedMessage(db, id, { actor: request.adminName, now, expiresAt }, hooks),
        request.log,
      )
      if (result.outcome === 'not_found') throw notFound(id)
      if (result.outcome === 'not_failed') {
        throw new AppError(
          'INVALID_STATE_TRANSITION',
          `Only a failed message can be retried; this one is ${result.status}`,
        )
      }
      if (result.outcome === 'skipped') {
        throw new AppError(
          'INVALID_STATE_TRANSITION',
          `This message cannot be retried now: ${skipped.get(id) ?? 'another retry holds it'}`,
        )
      }
      request.log.info({ messageId: id, actor: request.adminName }, 'message retried')
      return toAdminMessageView(result.row)
    },
  )

  app.post(
    '/:id/cancel',
    {
      schema: {
        operationId: 'cancelAdminMessage',
        tags,
        summary: 'Cancel any key’s scheduled or queued message, audited',
        description:
          'The key’s own cancel (`POST /api/third-party/messages/:messageId/cancel`) for any key’s recorded message: ' +
          'a `scheduled` (or recorded `queued`) message is canceled and never sent, audited as `message.cancel` ' +
          'with the admin as actor. A message a worker has taken (`sending` or later) is 409 ' +
          '`INVALID_STATE_TRANSITION`; canceling a canceled message answers it again. A message not yet ' +
          'recorded by a worker is 404 here for a moment.',
        security,
        params: AdminMessageIdParams,
        response: {
          200: AdminMessageViewSchema,
          ...errorResponses('NOT_FOUND', 'INVALID_STATE_TRANSITION', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request) => {
      const id = messageIdOf(request.params.id)
      const row = await findMessageById(db, id)
      if (!row) throw notFound(id)
      if (row.status === 'canceled') return toAdminMessageView(row)
      if (!CANCELABLE.has(row.status)) throw tooLate(row.status)
      // The claim decides a race with a worker as it does for the key's cancel (sending/cancel-claim.ts).
      const claim = await takeCancelClaim(app.deps, id, row.expiresAt?.toISOString(), request.log)
      let canceled: MessageRow | undefined
      try {
        canceled = await cancelMessageByAdmin(db, id, { actor: request.adminName, now: clock() })
      } catch (error) {
        // Not recorded, not audited: the claim given back, and the admin asks again.
        request.log.error({ err: error, messageId: id }, 'admin cancel could not record it')
        await claim.giveBack()
        throw unavailable('cancel messages')
      }
      if (!canceled) {
        // Ended meanwhile (a worker sent it, or its key canceled it): answered as it is now.
        const now = await findMessageById(db, id)
        if (now?.status === 'canceled') return toAdminMessageView(now)
        await claim.giveBack()
        throw tooLate(now?.status ?? 'sending')
      }
      // Due at once: the worker drops its job now instead of at the scheduled time.
      await app.deps.messages
        .promote(canceled.senderId ?? DEFAULT_SENDER_ID, id)
        .catch((error) =>
          request.log.warn(
            { err: error, messageId: id },
            'canceled message stays until its time; never sent',
          ),
        )
      request.log.info({ messageId: id, actor: request.adminName }, 'message canceled by admin')
      return toAdminMessageView(canceled)
    },
  )

  app.post(
    '/retry',
    {
      schema: {
        operationId: 'retryMessages',
        tags,
        summary: 'Send failed messages again, by filter (at most `limit`, oldest first)',
        description:
          'The list’s filters (the status is always `failed`); up to `limit` (1–1,000, default 100) messages, ' +
          'oldest accepted first. Messages that cannot go now (a worker still finishing one, its sender removed) ' +
          'are skipped. Answers how many went, and their ids.',
        security,
        body: RetryMessagesBody,
        response: {
          200: RetryMessagesResult,
          ...errorResponses('VALIDATION_ERROR', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request) => {
      const { body } = request
      const window = acceptedWindowOf(body.startDate, body.endDate, 'body')
      const now = clock()
      const expiresAt = validUntil(now)
      const { hooks, skipped } = retryHooks(app.deps, expiresAt, marketingJudge(app))
      const rows = await orUnavailable(
        () => retryFailedMessages(db, body, window, { actor: request.adminName, now, expiresAt }, hooks),
        request.log,
      )
      request.log.info(
        { actor: request.adminName, retried: rows.length, skipped: skipped.size },
        'failed messages retried',
      )
      return { retried: rows.length, messageIds: rows.map((row) => row.id) }
    },
  )
}
