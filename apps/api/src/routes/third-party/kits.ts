import { KitList, KitListQuery, pageMeta, Scopes } from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'

export const kitRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps
  app.get(
    '/kits',
    {
      config: { scope: Scopes.readKits },
      schema: {
        operationId: 'listKits',
        tags: ['orders'],
        summary: "List the tenant's kit records (one envelope with `data`)",
        querystring: KitListQuery,
        response: {
          200: KitList,
          ...errorResponses('VALIDATION_ERROR'),
        },
      },
    },
    async (request) => {
      const { query } = request
      const { items, itemCount } = await owned(db, callerOf(request)).kits.list(query)
      return { ...pageMeta(query.page, query.take, itemCount), data: items }
    },
  )
}
