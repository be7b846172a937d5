import {
  ApiKeyAdminDetail,
  ApiKeyAdminView,
  type ApiKeyDecision,
  ApiKeyIdParams,
  ApiKeyList,
  ApiKeyListQuery,
  ApproveApiKeyBody,
  pageMeta,
  quietHoursProblem,
  RejectApiKeyBody,
  RevokeApiKeyBody,
  UpdateApiKeyBody,
} from '@dispatch/contracts'
import {
  decideApiKey,
  findApiKeyById,
  isUuid,
  listApiKeyHistory,
  listApiKeys,
  updateApiKeyLimits,
} from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TSchema } from 'typebox'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { OPTIONAL_BODY } from '../../plugins/openapi.ts'
import { toApiKeyAdminView, usageView } from '../../views.ts'

const notFound = (id: string) => new AppError('NOT_FOUND', `No API key with id ${JSON.stringify(id)}`)
/** A malformed id names no key: 404, the same as an unknown one (and never a database error). */
const checkId = (id: string) => {
  if (!isUuid(id)) throw notFound(id)
  return id.toLowerCase()
}

const adminErrors = errorResponses('NOT_FOUND', 'VALIDATION_ERROR')
const security = [{ adminToken: [] }]

export const adminApiKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock } = app.deps

  app.get(
    '/',
    {
      schema: {
        operationId: 'listApiKeys',
        tags: ['admin'],
        summary: 'List API keys',
        security,
        querystring: ApiKeyListQuery,
        response: { 200: ApiKeyList, ...adminErrors },
      },
    },
    async (request) => {
      const { rows, itemCount } = await listApiKeys(db, request.query)
      return {
        ...pageMeta(request.query.page, request.query.take, itemCount),
        data: rows.map(toApiKeyAdminView),
      }
    },
  )

  app.get(
    '/:id',
    {
      schema: {
        operationId: 'getApiKey',
        tags: ['admin'],
        summary: 'One API key, with its decision history',
        security,
        params: ApiKeyIdParams,
        response: { 200: ApiKeyAdminDetail, ...adminErrors },
      },
    },
    async (request) => {
      const id = checkId(request.params.id)
      const [row, history, usage] = await Promise.all([
        findApiKeyById(db, id),
        listApiKeyHistory(db, id),
        app.messageUsageToday(id, request.log),
      ])
      if (!row) throw notFound(id)
      return {
        ...toApiKeyAdminView(row),
        history: history.map((h) => ({ ...h, createdAt: h.createdAt.toISOString() })),
        usage: usageView(row, usage),
      }
    },
  )

  app.patch(
    '/:id',
    {
      schema: {
        operationId: 'updateApiKey',
        tags: ['admin'],
        summary:
          "Set a key's sender, sender pool, rate, daily quota, transactional flag, quiet hours or content retention",
        description:
          'Any status of key. Only the fields given change; null resets one to the service default ' +
          '(`senderId` null or `"default"`: the default sender; `ratePerSecond` null: ' +
          '`MESSAGE_RATE_PER_SECOND`; `dailyQuota` null: no quota; `quietHours` null: none). `contentRetention` is ' +
          '`retain`, `discard` or 1–8760 hours, for messages accepted from then on (hours also redact older ones ' +
          'as they pass the limit). Each change is in the history ' +
          'with its actor and `changes`; one that changes nothing records nothing. Every instance ' +
          'applies it to the next request.',
        security,
        params: ApiKeyIdParams,
        body: UpdateApiKeyBody,
        response: { 200: ApiKeyAdminView, ...adminErrors, ...errorResponses('INVALID_REFERENCE') },
      },
    },
    async (request) => {
      const id = checkId(request.params.id)
      const quiet = request.body.quietHours
      const problem = quiet ? quietHoursProblem(quiet, 'body.quietHours') : undefined
      if (problem) throw new AppError('VALIDATION_ERROR', problem)
      const { senderPoolId } = request.body
      const result = await updateApiKeyLimits(db, {
        id,
        actor: request.adminName,
        limits: senderPoolId ? { ...request.body, senderPoolId: senderPoolId.toLowerCase() } : request.body,
        now: clock(),
      })
      if (result.outcome === 'not_found') throw notFound(id)
      if (result.outcome === 'unknown_sender') {
        throw new AppError('INVALID_REFERENCE', `No sender with id ${JSON.stringify(result.senderId)}`)
      }
      if (result.outcome === 'unknown_pool') {
        throw new AppError(
          'INVALID_REFERENCE',
          `No sender pool with id ${JSON.stringify(result.senderPoolId)}`,
        )
      }
      if (result.outcome === 'sender_not_in_pool') {
        throw new AppError(
          'INVALID_REFERENCE',
          `Sender ${JSON.stringify(result.senderId)} is not a member of sender pool ${JSON.stringify(result.senderPoolId)}: ` +
            "a key bound to a pool sends as one of the pool's members",
        )
      }
      if (result.outcome === 'updated') {
        request.log.info(
          { apiKeyId: id, actor: request.adminName, changes: result.changes },
          'api key limits changed',
        )
        // Cached keys carry their limits: every instance drops its copy.
        await app.publishApiKeyChange(id)
      }
      return toApiKeyAdminView(result.key)
    },
  )

  const decisionRoute = <B extends TSchema>(
    decision: ApiKeyDecision,
    body: B,
    summary: string,
    read: (body: Record<string, string | undefined>) => {
      reason: string | null
      tenantId?: string | undefined
    },
  ) =>
    app.post(
      `/:id/${decision}`,
      {
        // An empty POST (no body, no Content-Type) means "no options" (and fails validation where
        // an option is required, as reject's reason is).
        preValidation: async (request) => {
          request.body ??= {} as typeof request.body
        },
        schema: {
          ...((body as { required?: string[] }).required?.length ? {} : { [OPTIONAL_BODY]: true }),
          operationId: `${decision}ApiKey`,
          tags: ['admin'],
          summary,
          security,
          params: ApiKeyIdParams,
          body,
          response: { 200: ApiKeyAdminView, ...adminErrors, ...errorResponses('INVALID_STATE_TRANSITION') },
        },
      },
      async (request) => {
        const id = checkId(request.params.id)
        const result = await decideApiKey(db, {
          id,
          decision,
          actor: request.adminName,
          now: clock(),
          ...read(request.body as Record<string, string | undefined>),
        })
        if (result.outcome === 'not_found') throw notFound(id)
        if (result.outcome === 'invalid_transition') {
          throw new AppError(
            'INVALID_STATE_TRANSITION',
            `Cannot ${decision} an API key that is ${result.status}`,
          )
        }
        request.log.info({ apiKeyId: id, decision, actor: request.adminName }, 'api key decided')
        await app.publishApiKeyChange(id)
        return toApiKeyAdminView(result.key)
      },
    )

  decisionRoute('approve', ApproveApiKeyBody, 'Approve a pending key', (b) => ({
    reason: null,
    tenantId: b.tenantId,
  }))
  decisionRoute('reject', RejectApiKeyBody, 'Reject a pending key, with a reason', (b) => ({
    reason: b.reason ?? null,
  }))
  decisionRoute('revoke', RevokeApiKeyBody, 'Revoke an approved key', (b) => ({ reason: b.reason ?? null }))
}
