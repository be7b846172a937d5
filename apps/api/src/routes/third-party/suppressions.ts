import {
  CreateSuppressionBody,
  DEFAULT_SENDER_ID,
  DeleteSuppressionBody,
  pageMeta,
  recipientProblem,
  Scopes,
  SuppressionList,
  SuppressionListQuery,
  SuppressionView,
} from '@dispatch/contracts'
import { defaultPhoneNumberId } from '@dispatch/contracts/env'
import { findSuppression, listSuppressions, type SuppressionRow } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import Type from 'typebox'
import { optIn, optOut } from '../../consent/suppression-list.ts'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../responses.ts'

export const toSuppressionView = (row: SuppressionRow): SuppressionView => ({
  id: row.id,
  senderId: row.senderId,
  phoneNumberId: row.phoneNumberId,
  recipient: row.recipient,
  scope: row.scope,
  source: row.source,
  reason: row.reason,
  createdAt: row.createdAt.toISOString(),
})

/** Who manages the list through these routes: a key (its own sender only) or an admin (any). */
export interface SuppressionRouteOptions {
  audience: 'key' | 'admin'
}

const closed = { additionalProperties: false } as const
const IdParams = Type.Object({ id: Type.String({ format: 'uuid' }) })
const AdminFilter = Type.Object({ senderId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) })

/**
 * `GET/POST/DELETE …/suppressions`: the suppression list. A key reads and changes its own sender's
 * entries only (another sender's are 404, as if absent); an admin any sender's (`senderId` names it
 * on a create, and filters a list). Lifting an entry needs a reason, audited under the actor.
 */
export const suppressionRoutes: FastifyPluginAsyncTypebox<SuppressionRouteOptions> = async (app, options) => {
  const { db, config, clock } = app.deps
  const admin = options.audience === 'admin'
  const access = { scope: Scopes.manageSuppressions }
  const security = admin ? [{ adminToken: [] }] : [{ apiKey: [] }]
  const tags = admin ? ['admin'] : ['consent']
  const who = admin ? 'admins' : 'keys'
  const authErrors = admin
    ? (['ADMIN_AUTH_REQUIRED'] as const)
    : (['API_KEY_MISSING', 'API_KEY_INVALID', 'API_KEY_NOT_ACTIVE', 'INSUFFICIENT_SCOPE'] as const)
  /** The sender a request works on: the key's own; for an admin, the one named (default: `default`). */
  const senderOf = (request: FastifyRequest, named?: string) =>
    admin ? (named ?? DEFAULT_SENDER_ID) : (request.apiKey.senderId ?? DEFAULT_SENDER_ID)
  const actorOf = (request: FastifyRequest) =>
    admin ? `admin:${request.adminName}` : `key:${request.apiKey.id}`
  const scoped = (request: FastifyRequest) => (admin ? undefined : senderOf(request))

  app.get(
    '/suppressions',
    {
      config: access,
      schema: {
        operationId: admin ? 'adminListSuppressions' : 'listSuppressions',
        tags,
        summary: admin ? 'Suppression lists of every sender' : "Your sender's suppression list",
        description: admin
          ? 'Every sender’s opted-out recipients; `senderId` keeps one sender’s.'
          : 'Requires `manage:suppressions`. The recipients who opted out of the sender your key sends through.',
        security,
        querystring: admin
          ? Type.Object({ ...SuppressionListQuery.properties, ...AdminFilter.properties }, closed)
          : SuppressionListQuery,
        response: { 200: SuppressionList, ...errorResponses('VALIDATION_ERROR', ...authErrors) },
      },
    },
    async (request) => {
      const query = request.query as SuppressionListQuery & { senderId?: string }
      const senderId = admin ? query.senderId : senderOf(request)
      const { rows, itemCount } = await listSuppressions(db, query, senderId)
      return { ...pageMeta(query.page, query.take, itemCount), data: rows.map(toSuppressionView) }
    },
  )

  app.post(
    '/suppressions',
    {
      config: access,
      schema: {
        operationId: admin ? 'adminCreateSuppression' : 'createSuppression',
        tags,
        summary: 'Add a recipient to the suppression list',
        description:
          'Exactly one of `phone` and `userId`. `scope` `all` (default) blocks every send to them; `marketing` ' +
          `blocks marketing templates. Sends to them are then refused with 422 RECIPIENT_OPTED_OUT, and ` +
          `messages already queued to them are canceled. For ${who}.`,
        security,
        body: admin
          ? Type.Object({ ...CreateSuppressionBody.properties, ...AdminFilter.properties }, closed)
          : CreateSuppressionBody,
        response: { 201: SuppressionView, ...errorResponses('VALIDATION_ERROR', 'NOT_FOUND', ...authErrors) },
      },
    },
    async (request, reply) => {
      const body = request.body as CreateSuppressionBody & { senderId?: string }
      const problem = recipientProblem(body, 'body')
      if (problem) throw new AppError('VALIDATION_ERROR', problem)
      const senderId = senderOf(request, body.senderId)
      const phoneNumberId =
        app.sendRules.get(senderId)?.phoneNumberId ??
        (senderId === DEFAULT_SENDER_ID ? defaultPhoneNumberId(config) : undefined)
      if (!phoneNumberId) throw new AppError('NOT_FOUND', `No sender ${JSON.stringify(senderId)}`)
      const { row } = await optOut(
        app.deps,
        request.log,
        {
          phoneNumberId,
          senderId,
          recipient: (body.phone ?? body.userId) as string,
          scope: body.scope ?? 'all',
          source: admin ? 'admin' : 'api',
          reason: body.reason ?? null,
          createdBy: actorOf(request),
        },
        clock(),
      )
      return reply.code(201).send(toSuppressionView(row))
    },
  )

  app.get(
    '/suppressions/:id',
    {
      config: access,
      schema: {
        operationId: admin ? 'adminGetSuppression' : 'getSuppression',
        tags,
        summary: 'One suppression list entry',
        security,
        params: IdParams,
        response: { 200: SuppressionView, ...errorResponses('VALIDATION_ERROR', 'NOT_FOUND', ...authErrors) },
      },
    },
    async (request) => {
      const row = await findSuppression(db, request.params.id, scoped(request))
      if (!row) throw new AppError('NOT_FOUND', 'No such entry in this suppression list')
      return toSuppressionView(row)
    },
  )

  app.delete(
    '/suppressions/:id',
    {
      config: access,
      schema: {
        operationId: admin ? 'adminDeleteSuppression' : 'deleteSuppression',
        tags,
        summary: 'Lift an opt-out (audited, with its reason)',
        description:
          'The body gives the reason, kept in the audit log; `recipient.opted_in` goes to subscribed endpoints.',
        security,
        params: IdParams,
        body: DeleteSuppressionBody,
        response: { 200: SuppressionView, ...errorResponses('VALIDATION_ERROR', 'NOT_FOUND', ...authErrors) },
      },
    },
    async (request) => {
      const removed = await optIn(
        app.deps,
        request.log,
        { id: request.params.id },
        {
          actor: actorOf(request),
          reason: request.body.reason,
          ...(admin ? {} : { senderId: senderOf(request) }),
        },
        clock(),
      )
      if (!removed) throw new AppError('NOT_FOUND', 'No such entry in this suppression list')
      return toSuppressionView(removed)
    },
  )
}
