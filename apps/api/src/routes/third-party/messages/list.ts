import { MessageList, MessageListQuery, pageMeta, Scopes } from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { acceptedWindowOf } from '../../../http/accepted-window.ts'
import { callerOf } from '../../../http/caller.ts'
import { splitCommaLists } from '../../../http/comma-lists.ts'
import { errorResponses } from '../../../http/error-responses.ts'
import { withFallback } from '../../../sending/message-fallback-view.ts'
import { toMessageView } from '../../../views.ts'
import type { MessageRouteOptions } from './send.ts'

/**
 * The key's own messages as recorded in Postgres: a message is listed once the worker has written
 * its row (or, scheduled, once accepted), not while its job only waits in Redis.
 */
export const messageListRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  const { lists } = app.deps

  app.get(
    '',
    {
      config: { scope: Scopes.readMessages },
      preValidation: splitCommaLists('status', 'type', 'fallback'),
      schema: {
        operationId: 'listMessages',
        hide: options.hide,
        tags: ['messages'],
        summary: 'List your messages (one envelope with `data`)',
        description:
          'Requires the `read:messages` scope. A key sees only the messages it sent, once the worker has recorded them.',
        querystring: MessageListQuery,
        response: {
          200: MessageList,
          ...errorResponses('VALIDATION_ERROR', 'TENANT_FORBIDDEN'),
        },
      },
    },
    async (request) => {
      const { query } = request
      // Messages belong to keys, not tenants: a tenantId may only name the key's own.
      const mine = owned(lists, callerOf(request))
      if (query.tenantId !== undefined) mine.tenant(query.tenantId)
      const window = acceptedWindowOf(query.startDate, query.endDate)
      const { rows, itemCount, itemCountExact } = await mine.messages.list(query, window)
      const fallbacks = await mine.messages.fallbacks(rows.map((row) => row.id))
      return {
        ...pageMeta(query.page, query.take, itemCount),
        itemCountExact,
        data: rows.map((row) => withFallback(toMessageView(row), fallbacks.get(row.id), row)),
      }
    },
  )
}
