import {
  CreateSenderPoolBody,
  pageMeta,
  SenderPoolIdParams,
  SenderPoolList,
  SenderPoolListQuery,
  SenderPoolView,
  UpdateSenderPoolBody,
} from '@dispatch/contracts'
import {
  createSenderPool,
  deleteSenderPool,
  findSenderPool,
  listSenderPools,
  type SenderPoolWriteResult,
  updateSenderPool,
} from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { publishSenderPoolChange } from '../../sender-changes.ts'
import { toSenderPoolView } from '../../senders/pool-views.ts'

const notFound = (id: string) => new AppError('NOT_FOUND', `No sender pool with id ${JSON.stringify(id)}`)

/** The pool written, or the error its members' problem is. */
function written(id: string | undefined, result: SenderPoolWriteResult) {
  if ('outcome' in result) {
    if (result.outcome === 'not_found') throw notFound(id ?? '')
    return result.detail
  }
  const sender = JSON.stringify(result.senderId)
  switch (result.problem) {
    case 'unknown_sender':
      throw new AppError('INVALID_REFERENCE', `No sender with id ${sender}`)
    case 'duplicate_sender':
      throw new AppError('VALIDATION_ERROR', `body.members names sender ${sender} more than once`)
    case 'business_mismatch':
      throw new AppError(
        'SENDER_POOL_BUSINESS_MISMATCH',
        `Sender ${sender} is of business portfolio ${result.portfolio}, not ${result.expected}: ` +
          "a pool's senders are all of one business (its businessId, else its wabaId)",
      )
    case 'member_in_use':
      throw new AppError(
        'SENDER_POOL_IN_USE',
        `Sender ${sender} is the own sender of ${result.apiKeyIds.length === 1 ? 'an API key' : `${result.apiKeyIds.length} API keys`} ` +
          `bound to this pool (${result.apiKeyIds.join(', ')}); give the key another member first`,
      )
  }
}

const errors = errorResponses('NOT_FOUND', 'VALIDATION_ERROR')
const writeErrors = errorResponses('INVALID_REFERENCE', 'SENDER_POOL_BUSINESS_MISMATCH')
const security = [{ adminToken: [] }]
const tags = ['admin']

/**
 * `/api/admin/sender-pools`: ordered sets of senders of one business that keys may be bound to
 * (`PATCH /api/admin/api-keys/:id` `senderPoolId`). Each change writes an `admin_audit_log` row
 * in its transaction. No key route reads a pool.
 */
export const adminSenderPoolRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock } = app.deps
  const view = (detail: Parameters<typeof toSenderPoolView>[0]) => toSenderPoolView(detail, clock().getTime())

  app.post(
    '/',
    {
      schema: {
        operationId: 'createSenderPool',
        tags,
        summary: 'Create a sender pool: senders of one business, in order, each with a weight',
        security,
        body: CreateSenderPoolBody,
        response: { 201: SenderPoolView, ...errors, ...writeErrors },
      },
    },
    async (request, reply) => {
      const result = await createSenderPool(db, { ...request.body, actor: request.adminName, now: clock() })
      const detail = written(undefined, result)
      request.log.info({ senderPoolId: detail.pool.id, actor: request.adminName }, 'sender pool created')
      await publishSenderPoolChange(app.deps, request.log, detail.pool.id)
      return reply.code(201).send(view(detail))
    },
  )

  app.get(
    '/',
    {
      schema: {
        operationId: 'listSenderPools',
        tags,
        summary: 'List sender pools, with their members and health',
        security,
        querystring: SenderPoolListQuery,
        response: { 200: SenderPoolList, ...errors },
      },
    },
    async (request) => {
      const { rows, itemCount } = await listSenderPools(db, request.query)
      return { ...pageMeta(request.query.page, request.query.take, itemCount), data: rows.map(view) }
    },
  )

  app.get(
    '/:id',
    {
      schema: {
        operationId: 'getSenderPool',
        tags,
        summary: 'One sender pool, with its members and health',
        security,
        params: SenderPoolIdParams,
        response: { 200: SenderPoolView, ...errors },
      },
    },
    async (request) => {
      const detail = await findSenderPool(db, request.params.id)
      if (!detail) throw notFound(request.params.id)
      return view(detail)
    },
  )

  app.patch(
    '/:id',
    {
      schema: {
        operationId: 'updateSenderPool',
        tags,
        summary: 'Rename a sender pool, or replace its members (the whole ordered list)',
        description:
          'A member that is the own sender (`senderId`) of a key bound to the pool cannot leave it: 409 ' +
          '`SENDER_POOL_IN_USE`, naming the keys.',
        security,
        params: SenderPoolIdParams,
        body: UpdateSenderPoolBody,
        response: { 200: SenderPoolView, ...errors, ...writeErrors, ...errorResponses('SENDER_POOL_IN_USE') },
      },
    },
    async (request) => {
      const { id } = request.params
      const result = await updateSenderPool(db, {
        id,
        ...request.body,
        actor: request.adminName,
        now: clock(),
      })
      const detail = written(id, result)
      request.log.info({ senderPoolId: id, actor: request.adminName }, 'sender pool changed')
      await publishSenderPoolChange(app.deps, request.log, id)
      return view(detail)
    },
  )

  app.delete(
    '/:id',
    {
      schema: {
        operationId: 'deleteSenderPool',
        tags,
        summary: 'Delete a sender pool no key is bound to',
        security,
        params: SenderPoolIdParams,
        response: {
          204: { type: 'null', description: 'Deleted' },
          ...errors,
          ...errorResponses('SENDER_POOL_IN_USE'),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params
      const result = await deleteSenderPool(db, { id, actor: request.adminName, now: clock() })
      if (result.outcome === 'not_found') throw notFound(id)
      if (result.outcome === 'in_use') {
        throw new AppError(
          'SENDER_POOL_IN_USE',
          `${result.boundKeys === 1 ? 'An API key is' : `${result.boundKeys} API keys are`} bound to this pool; ` +
            'unbind them (`senderPoolId: null`) first',
        )
      }
      request.log.info({ senderPoolId: id, actor: request.adminName }, 'sender pool deleted')
      await publishSenderPoolChange(app.deps, request.log, id)
      return reply.code(204).send(null)
    },
  )
}
