import {
  CreateErasureBody,
  ErasureView,
  PathId,
  recipientOf,
  recipientProblem,
  Scopes,
} from '@dispatch/contracts'
import { createErasure, type ErasureRow, findErasure, owned } from '@dispatch/db'
import { recipientHasher } from '@dispatch/runtime'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import Type from 'typebox'
import { AppError } from '../../errors.ts'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'

export const toErasureView = (row: ErasureRow): ErasureView => ({
  id: row.id,
  status: row.status,
  subject: { hash: row.subjectHash },
  scope: row.apiKeyId === null ? 'all' : 'key',
  requestedBy: row.requestedBy,
  report: row.report ?? null,
  error: row.error,
  createdAt: row.createdAt.toISOString(),
  startedAt: row.startedAt?.toISOString() ?? null,
  completedAt: row.completedAt?.toISOString() ?? null,
})

/** Who erases through these routes: an admin (every key's data) or a key (its own, `manage:data`). */
export interface ErasureRouteOptions {
  audience: 'key' | 'admin'
}

const IdParams = Type.Object({ id: PathId() })

/**
 * `POST/GET …/erasures`: erases one recipient (a phone or a BSUID, with the identities it is paired
 * with). The request stores the erasure, its audit entry and its job's outbox row in one transaction
 * and answers 202; a `lifecycle` worker does the erasing (apps/worker/src/lifecycle/erasure.ts).
 * A key erases and reads only its own erasures (another key's id is 404, as if absent).
 */
export const erasureRoutes: FastifyPluginAsyncTypebox<ErasureRouteOptions> = async (app, options) => {
  const { db, config, clock } = app.deps
  const admin = options.audience === 'admin'
  const access = { scope: Scopes.manageData }
  const tags = admin ? ['admin'] : ['data']
  const hash = recipientHasher(config)

  app.post(
    '/erasures',
    {
      config: access,
      schema: {
        operationId: admin ? 'adminCreateErasure' : 'createErasure',
        tags,
        summary: admin
          ? "Erase a recipient's data across every key"
          : "Erase a recipient's data held for your key",
        description:
          'Exactly one of `phone` and `userId`. Answers 202 with the erasure, `pending`; a worker then removes ' +
          'the recipient and the content of every message, reply and event ' +
          (admin ? 'of every key' : 'of your key') +
          ', cancels what is still queued to them, and keeps ' +
          (admin ? 'every opt-out of theirs' : 'your tenant’s opt-out entries of theirs') +
          ' (by hash). The erasure names the ' +
          'recipient by hash only. ' +
          (admin ? 'For admins.' : 'Requires `manage:data`.'),
        body: CreateErasureBody,
        response: { 202: ErasureView, ...errorResponses('VALIDATION_ERROR') },
      },
    },
    async (request, reply) => {
      const problem = recipientProblem(request.body, 'body')
      if (problem) throw new AppError('VALIDATION_ERROR', problem)
      const { phone, userId } = request.body
      const subject = {
        subjectHash: hash(recipientOf(request.body)),
        recipient: phone ? { phone } : { userId },
      }
      const row = admin
        ? await createErasure(
            db,
            { ...subject, apiKeyId: null, requestedBy: `admin:${request.adminName}` },
            clock(),
          )
        : await owned(db, callerOf(request)).erasures.create(subject, clock())
      request.log.info({ erasureId: row.id, scope: admin ? 'all' : 'key' }, 'erasure requested')
      return reply.code(202).send(toErasureView(row))
    },
  )

  app.get(
    '/erasures/:id',
    {
      config: access,
      schema: {
        operationId: admin ? 'adminGetErasure' : 'getErasure',
        tags,
        summary: 'One erasure: its status and, once completed, what it erased',
        description: admin
          ? 'Any erasure, an admin’s or a key’s.'
          : 'Requires `manage:data`. Your key’s own erasures only.',
        params: IdParams,
        response: { 200: ErasureView, ...errorResponses('VALIDATION_ERROR', 'NOT_FOUND') },
      },
    },
    async (request) => {
      const row = admin
        ? await findErasure(db, request.params.id)
        : await owned(db, callerOf(request)).erasures.find(request.params.id)
      if (!row) throw new AppError('NOT_FOUND', 'No such erasure')
      return toErasureView(row)
    },
  )
}
