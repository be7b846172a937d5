import {
  DEFAULT_SENDER_ID,
  pageMeta,
  SenderIdParams,
  TemplateList,
  TemplateListQuery,
  TemplateSyncResult,
} from '@dispatch/contracts'
import { findSender, isUuid, listTemplates, recordAdminAction } from '@dispatch/db'
import { syncSenderTemplates, TemplateFetchError, TemplateSyncRefused } from '@dispatch/templates'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { toTemplateView } from '../../templates/views.ts'

const notFound = (id: string) => new AppError('NOT_FOUND', `No sender with id ${JSON.stringify(id)}`)
const checkId = (id: string) => {
  if (id === DEFAULT_SENDER_ID) return id
  if (!isUuid(id)) throw notFound(id)
  return id.toLowerCase()
}
/** An on-demand sync waits this long for one already running (the schedule's, say) to finish. */
const SYNC_WAIT_MS = 30_000

const security = [{ adminToken: [] }]
const tags = ['admin']
const errors = errorResponses('NOT_FOUND', 'VALIDATION_ERROR')

/** A sender's template catalog, for admins: read it, and sync it from the sender's account now. */
export const adminSenderTemplateRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, redis, config } = app.deps

  app.post(
    '/:id/templates/sync',
    {
      schema: {
        operationId: 'syncSenderTemplates',
        tags,
        summary: "Sync the sender's templates from its WhatsApp Business Account now",
        description:
          'Reads every page of `GET /{waba-id}/message_templates` with the sender’s token and makes the ' +
          'catalog what Meta lists. 409 when the sender has no `wabaId` or no credentials; 502 when the ' +
          'Graph API refuses (its message is kept).',
        security,
        params: SenderIdParams,
        response: {
          200: TemplateSyncResult,
          ...errors,
          ...errorResponses('INVALID_STATE_TRANSITION', 'PLATFORM_ERROR', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request) => {
      const id = checkId(request.params.id)
      let result: TemplateSyncResult | null
      try {
        result = await syncSenderTemplates(
          { db, redis, config, timeoutMs: config.TEMPLATE_SYNC_TIMEOUT_MS },
          id,
          { waitMs: SYNC_WAIT_MS },
        )
      } catch (error) {
        if (error instanceof TemplateSyncRefused) {
          if (error.reason === 'not-found') throw notFound(id)
          if (error.reason === 'busy') {
            throw new AppError('SERVICE_UNAVAILABLE', error.message, { 'retry-after': '5' })
          }
          throw new AppError('INVALID_STATE_TRANSITION', error.message)
        }
        if (error instanceof TemplateFetchError) {
          request.log.warn(
            { senderId: id, code: error.code, kind: error.kind },
            'template sync refused by the platform',
          )
          throw new AppError(
            'PLATFORM_ERROR',
            error.kind === 'token-refused'
              ? `The platform refused the sender's token (${error.code}): ${error.message}`
              : `The platform could not list the templates (${error.code}): ${error.message}`,
          )
        }
        throw error
      }
      if (!result) throw new Error('a sync without staleBefore always runs')
      // Current here at once; other instances on the announcement the sync made.
      await app.sending.rules.reload(result.senderId)
      const { senderId, ...counts } = result
      await recordAdminAction(db, {
        actor: request.adminName,
        action: 'templates.sync',
        targetType: 'sender',
        targetId: senderId,
        details: counts,
      })
      request.log.info({ ...result, actor: request.adminName }, 'sender templates synced')
      return result
    },
  )

  app.get(
    '/:id/templates',
    {
      schema: {
        operationId: 'listSenderTemplates',
        tags,
        summary: "A sender's templates, as synced (the same view senders get)",
        security,
        params: SenderIdParams,
        querystring: TemplateListQuery,
        response: { 200: TemplateList, ...errors },
      },
    },
    async (request) => {
      const id = checkId(request.params.id)
      if (!(await findSender(db, id))) throw notFound(id)
      const { rows, itemCount } = await listTemplates(db, [id], request.query)
      return {
        ...pageMeta(request.query.page, request.query.take, itemCount),
        data: rows.map(toTemplateView),
      }
    },
  )
}
