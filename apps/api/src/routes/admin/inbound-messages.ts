import { InboundMessageList, InboundMessageListQuery, pageMeta } from '@dispatch/contracts'
import { listInboundMessages } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../http/error-responses.ts'
import { toInboundMessageView } from '../../views.ts'

/** Replies from the platform, routed or not: admins see the unroutable ones no key receives. */
export const adminInboundMessageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps

  app.get(
    '/',
    {
      schema: {
        operationId: 'listInboundMessages',
        tags: ['admin'],
        summary: 'List replies (inbound messages), newest first; routed=false for the unroutable',
        security: [{ adminToken: [] }],
        querystring: InboundMessageListQuery,
        response: { 200: InboundMessageList, ...errorResponses('VALIDATION_ERROR') },
      },
    },
    async (request) => {
      const { rows, itemCount } = await listInboundMessages(db, request.query)
      return {
        ...pageMeta(request.query.page, request.query.take, itemCount),
        data: rows.map(toInboundMessageView),
      }
    },
  )
}
