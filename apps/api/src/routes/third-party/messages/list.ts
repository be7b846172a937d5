import {
  acceptedWindow,
  MessageList,
  MessageListQuery,
  pageMeta,
  parseTimeBound,
  Scopes,
  TIME_BOUND_RULE,
} from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError } from '../../../errors.ts'
import { errorResponses } from '../../../http/error-responses.ts'
import { toMessageView } from '../../../views.ts'
import { callerOf, splitCommaLists } from '../tenancy.ts'
import type { MessageRouteOptions } from './send.ts'

/**
 * The acceptance window of `startDate`/`endDate`, or a 400 naming the parameter at fault (in the
 * query string, or a body that carries the same filters).
 */
export function acceptedWindowOf(
  startDate: string | undefined,
  endDate: string | undefined,
  where: 'querystring' | 'body' = 'querystring',
) {
  const bound = (value: string | undefined, name: string) => {
    if (value === undefined) return undefined
    const parsed = parseTimeBound(value)
    if (!parsed) throw new AppError('VALIDATION_ERROR', `${where}.${name} ${TIME_BOUND_RULE}`)
    return parsed
  }
  const window = acceptedWindow(bound(startDate, 'startDate'), bound(endDate, 'endDate'))
  const last = window.before
    ? Date.parse(window.before) - 1
    : window.until
      ? Date.parse(window.until)
      : Infinity
  if (window.from && Date.parse(window.from) > last) {
    throw new AppError('VALIDATION_ERROR', `${where}.startDate must not be after ${where}.endDate`)
  }
  return window
}

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
      preValidation: splitCommaLists('status', 'type'),
      schema: {
        operationId: 'listMessages',
        hide: options.hide,
        tags: ['messages'],
        summary: 'List your messages (one envelope with `data`)',
        description:
          'Requires the `read:messages` scope. A key sees only the messages it sent, once the worker has recorded them.',
        security: [{ apiKey: [] }],
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
      return { ...pageMeta(query.page, query.take, itemCount), itemCountExact, data: rows.map(toMessageView) }
    },
  )
}
