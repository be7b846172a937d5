import {
  CreateSuppressionBody,
  DEFAULT_SENDER_ID,
  DeleteSuppressionBody,
  isDispatchId,
  isUserId,
  PathId,
  pageMeta,
  recipientProblem,
  Scopes,
  SuppressionList,
  SuppressionListQuery,
  SuppressionStatus,
  SuppressionView,
} from '@dispatch/contracts'
import { findSuppression, listSuppressions, owned } from '@dispatch/db'
import { recipientHasher } from '@dispatch/runtime'
import { defaultPhoneNumberId } from '@dispatch/runtime/env'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import Type from 'typebox'
import { dropCopies, optIn, optOut } from '../../consent/suppression-list.ts'
import { toSuppressionStatus, toSuppressionView } from '../../consent/views.ts'
import { AppError } from '../../errors.ts'
import { callerOf, pooledCallerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'

const E164 = /^\+[1-9][0-9]{7,14}$/

/**
 * Who manages the list through these routes: a key (its tenant's entries on its sender, through
 * `owned(...)`) or an admin (every entry, audited).
 */
export interface SuppressionRouteOptions {
  audience: 'key' | 'admin'
}

const closed = { additionalProperties: false } as const
const IdParams = Type.Object({ id: PathId() })
const EntryParams = Type.Object({
  idOrRecipient: Type.String({
    minLength: 1,
    maxLength: 160,
    description: 'An entry id of yours (uuid), or a recipient: a phone in E.164 (`%2B` for `+`) or a userId',
  }),
})
const AdminFilter = Type.Object({ senderId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) })

/**
 * `GET/POST/DELETE …/suppressions`: the suppression list. A key lists, reads and lifts its tenant's
 * own entries on its sender only, a pooled key on its pool's numbers (another tenant's or sender's
 * are 404, as if absent), and asks whether one recipient is blocked for it; an admin reads and lifts
 * any entry (`senderId` names a sender on a create, and filters a list). Lifting an entry needs a
 * reason, audited under the actor.
 */
export const suppressionRoutes: FastifyPluginAsyncTypebox<SuppressionRouteOptions> = async (app, options) => {
  const { db, config, clock } = app.deps
  const admin = options.audience === 'admin'
  const access = { scope: Scopes.manageSuppressions }
  const tags = admin ? ['admin'] : ['consent']
  const who = admin ? 'admins' : 'keys'
  /** The sender a request works on: the key's own; for an admin, the one named (default: `default`). */
  const senderOf = (request: FastifyRequest, named?: string) =>
    admin ? (named ?? DEFAULT_SENDER_ID) : (request.apiKey.senderId ?? DEFAULT_SENDER_ID)
  const actorOf = (request: FastifyRequest) =>
    admin ? `admin:${request.adminName}` : `key:${request.apiKey.id}`
  const hash = recipientHasher(config)
  /**
   * A key's entries: its tenant's on its sender and, for a pooled key, on every member of its pool
   * (they block its sends there too), as this process has the pool loaded.
   */
  const entriesOf = (request: FastifyRequest) =>
    owned(db, pooledCallerOf(request, app.sending.pools)).suppressions

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
          : 'Requires `manage:suppressions`. The entries your tenant (your key, without one) added on the ' +
            'sender your key sends through, and for a key bound to a sender pool on every number of the pool ' +
            '(each entry names its `senderId`). The recipients’ own opt-outs are not listed: ask about one ' +
            'with `GET /suppressions/{recipient}`.',
        querystring: admin
          ? Type.Object({ ...SuppressionListQuery.properties, ...AdminFilter.properties }, closed)
          : SuppressionListQuery,
        response: { 200: SuppressionList, ...errorResponses('VALIDATION_ERROR') },
      },
    },
    async (request) => {
      const query = request.query as SuppressionListQuery & { senderId?: string }
      const { rows, itemCount } = admin
        ? await listSuppressions(db, query, query.senderId)
        : await entriesOf(request).list(query)
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
          `messages already queued to them are canceled. For ${who}` +
          (admin
            ? ': an admin’s entry blocks every key on the sender.'
            : ': your entry blocks your tenant’s keys only (your key alone, without a tenant).'),
        body: admin
          ? Type.Object({ ...CreateSuppressionBody.properties, ...AdminFilter.properties }, closed)
          : CreateSuppressionBody,
        response: { 201: SuppressionView, ...errorResponses('VALIDATION_ERROR', 'NOT_FOUND') },
      },
    },
    async (request, reply) => {
      const body = request.body as CreateSuppressionBody & { senderId?: string }
      const problem = recipientProblem(body, 'body')
      if (problem) throw new AppError('VALIDATION_ERROR', problem)
      const senderId = senderOf(request, body.senderId)
      const phoneNumberId =
        app.sending.rules.get(senderId)?.phoneNumberId ??
        (senderId === DEFAULT_SENDER_ID ? defaultPhoneNumberId(config) : undefined)
      if (!phoneNumberId) throw new AppError('NOT_FOUND', `No sender ${JSON.stringify(senderId)}`)
      const fields = {
        phoneNumberId,
        recipient: (body.phone ?? body.userId) as string,
        scope: body.scope ?? 'all',
        reason: body.reason ?? null,
      }
      // A key's entry is its tenant's (its own, without one); an admin's blocks every key.
      const entry = admin
        ? { ...fields, senderId, source: 'admin' as const, createdBy: actorOf(request) }
        : owned(db, callerOf(request)).suppressions.entry(fields)
      const { row } = await optOut(app.deps, request.log, entry, clock())
      return reply.code(201).send(toSuppressionView(row))
    },
  )

  if (admin) {
    app.get(
      '/suppressions/:id',
      {
        config: access,
        schema: {
          operationId: 'adminGetSuppression',
          tags,
          summary: 'One suppression list entry',
          params: IdParams,
          response: {
            200: SuppressionView,
            ...errorResponses('VALIDATION_ERROR', 'NOT_FOUND'),
          },
        },
      },
      async (request) => {
        const row = await findSuppression(db, request.params.id)
        if (!row) throw new AppError('NOT_FOUND', 'No such entry in this suppression list')
        return toSuppressionView(row)
      },
    )
  } else {
    app.get(
      '/suppressions/:idOrRecipient',
      {
        config: access,
        schema: {
          operationId: 'getSuppression',
          tags,
          summary: 'One entry of yours, or whether a recipient is blocked for your key',
          description:
            'Requires `manage:suppressions`. With an entry id (uuid): that entry, if your tenant’s (else 404). ' +
            'With a recipient (a phone in E.164, `%2B` for `+`, or a userId): whether sends to them are ' +
            'blocked for your key, for which scope, and by which entries (the recipient’s own opt-outs, ' +
            'and your tenant’s; ids and reasons only on yours); for a key bound to a sender pool, on every ' +
            'number of the pool.',
          params: EntryParams,
          response: {
            200: Type.Union([SuppressionView, SuppressionStatus]),
            ...errorResponses('VALIDATION_ERROR', 'NOT_FOUND'),
          },
        },
      },
      async (request) => {
        const asked = request.params.idOrRecipient
        const mine = entriesOf(request)
        if (isDispatchId(asked)) {
          const row = await mine.find(asked.toLowerCase())
          if (!row) throw new AppError('NOT_FOUND', 'No such entry in this suppression list')
          return toSuppressionView(row)
        }
        if (!E164.test(asked) && !isUserId(asked)) {
          throw new AppError(
            'VALIDATION_ERROR',
            'params.idOrRecipient must be an entry id (uuid), a phone in E.164 (%2B for the +) or a userId',
          )
        }
        // By name, and by hash: an entry kept after the recipient was erased still blocks them. A
        // pooled key's sends are blocked by entries on every number of its pool too.
        return toSuppressionStatus(asked, await mine.ofRecipient([asked, hash(asked)]))
      },
    )
  }

  app.delete(
    '/suppressions/:id',
    {
      config: access,
      schema: {
        operationId: admin ? 'adminDeleteSuppression' : 'deleteSuppression',
        tags,
        summary: 'Lift an opt-out (audited, with its reason)',
        description:
          'The body gives the reason, kept in the audit log; `recipient.opted_in` goes to subscribed endpoints ' +
          (admin
            ? 'of every key the entry blocked.'
            : 'of your tenant’s keys. Only your tenant’s entries on your sender (a pooled key: on its pool’s ' +
              'numbers): a recipient’s own opt-out is lifted by them (an opt-in keyword) or an admin.'),
        params: IdParams,
        body: DeleteSuppressionBody,
        response: { 200: SuppressionView, ...errorResponses('VALIDATION_ERROR', 'NOT_FOUND') },
      },
    },
    async (request) => {
      const { id } = request.params
      const { reason } = request.body
      const removed = admin
        ? await optIn(app.deps, request.log, { id }, { actor: actorOf(request), reason }, clock())
        : await entriesOf(request).remove(id, reason, clock())
      if (!admin) await dropCopies(app.deps, request.log, [removed])
      if (!removed) throw new AppError('NOT_FOUND', 'No such entry in this suppression list')
      return toSuppressionView(removed)
    },
  )
}
