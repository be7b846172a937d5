import { KeyTemplateListQuery, pageMeta, Scopes, TemplateList } from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { pooledCallerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { toTemplateView } from '../../templates/views.ts'

/**
 * The templates a key's sends are checked against: its sender's catalog, or for a pooled key every
 * member's (each send is checked against the catalog of the number chosen for it).
 */
export const templateRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps
  app.get(
    '/templates',
    {
      config: { scope: Scopes.sendTemplate },
      schema: {
        operationId: 'listTemplates',
        tags: ['templates'],
        summary: "Your senders' WhatsApp templates, with their status and the variables a send must fill",
        description:
          'Requires the `send:template` scope. Lists the templates of the sender your key sends through ' +
          '(as last synced from its WhatsApp Business Account and kept current by Meta’s webhooks); empty ' +
          'until an admin has synced it. A key bound to a sender pool lists every member’s, each naming its ' +
          '`senderId`: a send is checked against the catalog of the number chosen for it (templates are per ' +
          'WABA). `senderId` narrows the list to one of your senders; another matches nothing.',
        querystring: KeyTemplateListQuery,
        response: {
          200: TemplateList,
          ...errorResponses('VALIDATION_ERROR'),
        },
      },
    },
    async (request) => {
      const { rows, itemCount } = await owned(db, pooledCallerOf(request, app.sending.pools)).templates.list(
        request.query,
      )
      return {
        ...pageMeta(request.query.page, request.query.take, itemCount),
        data: rows.map(toTemplateView),
      }
    },
  )
}
