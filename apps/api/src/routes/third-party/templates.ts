import { pageMeta, Scopes, TemplateList, TemplateListQuery } from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { toTemplateView } from '../../templates/views.ts'

/** The templates of the key's own sender: what a template send is checked against. */
export const templateRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps
  app.get(
    '/templates',
    {
      config: { scope: Scopes.sendTemplate },
      schema: {
        operationId: 'listTemplates',
        tags: ['templates'],
        summary: "Your sender's WhatsApp templates, with their status and the variables a send must fill",
        description:
          'Requires the `send:template` scope. Lists the templates of the sender your key sends through ' +
          '(as last synced from its WhatsApp Business Account and kept current by Meta’s webhooks); empty ' +
          'until an admin has synced it.',
        querystring: TemplateListQuery,
        response: {
          200: TemplateList,
          ...errorResponses('VALIDATION_ERROR'),
        },
      },
    },
    async (request) => {
      const { rows, itemCount } = await owned(db, callerOf(request)).templates.list(request.query)
      return {
        ...pageMeta(request.query.page, request.query.take, itemCount),
        data: rows.map(toTemplateView),
      }
    },
  )
}
