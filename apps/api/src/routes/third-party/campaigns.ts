import { Campaign, CampaignList, CreateCampaignBody, Scopes } from '@dispatch/contracts'
import { type CampaignRow, owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { declareCampaignRoutes } from '../../campaigns/routes.ts'
import { checkCampaignTemplate } from '../../campaigns/template.ts'
import { toCampaignView } from '../../campaigns/view.ts'
import { AppError } from '../../errors.ts'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { SCHEDULE_MAX_AHEAD_MS } from '../../sending/accept.ts'

const tags = ['campaigns']
const security = [{ apiKey: [] }]

/**
 * `/api/third-party/campaigns` (scope `manage:campaigns`): a key's campaigns — created with their
 * template, given an audience (campaign-audience.ts), started, paused, resumed, canceled, and read
 * back with their recipients' states and an export of every row. Only the key's own: another key's
 * campaign id is `404`, as an unknown one. docs/campaigns.md.
 */
export const campaignRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock } = app.deps
  const config = { scope: Scopes.manageCampaigns }

  const view = async (campaigns: ReturnType<typeof owned>['campaigns'], row: CampaignRow) =>
    toCampaignView(row, await campaigns.counts(row))

  app.post(
    '/campaigns',
    {
      config,
      schema: {
        operationId: 'createCampaign',
        tags,
        summary: 'Create a campaign: a name and a template; its audience comes next',
        description:
          'Requires `manage:campaigns`, and `send:template` for its messages. The template is checked against ' +
          "your sender's catalog as a send is (422 `TEMPLATE_NOT_FOUND`, `TEMPLATE_NOT_APPROVED`, " +
          '`TEMPLATE_PARAMETERS_MISMATCH` for its header or button variables). The campaign starts in `draft`; ' +
          'upload its audience with `PUT /campaigns/{campaignId}/audience`, then `POST …/start`.',
        security,
        body: CreateCampaignBody,
        response: {
          201: Campaign,
          ...errorResponses(
            'VALIDATION_ERROR',
            'TEMPLATE_NOT_FOUND',
            'TEMPLATE_NOT_APPROVED',
            'TEMPLATE_PARAMETERS_MISMATCH',
          ),
        },
      },
    },
    async (request, reply) => {
      if (!request.apiKey.scopes.includes(Scopes.sendTemplate)) {
        throw new AppError(
          'INSUFFICIENT_SCOPE',
          `The API key lacks the "${Scopes.sendTemplate}" scope its messages need`,
        )
      }
      const caller = callerOf(request)
      const body = request.body
      const now = clock()
      if (body.startAt !== undefined) {
        const at = Date.parse(body.startAt)
        if (Number.isNaN(at)) throw new AppError('VALIDATION_ERROR', 'body.startAt must be a date-time')
        if (at - now.getTime() > SCHEDULE_MAX_AHEAD_MS)
          throw new AppError('VALIDATION_ERROR', 'body.startAt must be at most 35 days ahead')
      }
      if (
        body.validitySeconds !== undefined &&
        body.validitySeconds < app.deps.config.MESSAGE_VALIDITY_MIN_SECONDS
      ) {
        throw new AppError(
          'VALIDATION_ERROR',
          `body.validitySeconds must be at least ${app.deps.config.MESSAGE_VALIDITY_MIN_SECONDS}`,
        )
      }
      checkCampaignTemplate(app.sending.rules, caller.senderId, body.template)
      const campaigns = owned(db, caller).campaigns
      const row = await campaigns.create(
        {
          name: body.name,
          template: body.template,
          startAt: body.startAt === undefined ? null : new Date(body.startAt),
          validitySeconds: body.validitySeconds ?? null,
          quietHours: body.quietHours ?? null,
        },
        now,
      )
      request.log.info({ campaignId: row.id }, 'campaign created')
      return reply.code(201).send(await view(campaigns, row))
    },
  )

  app.get(
    '/campaigns',
    {
      config,
      schema: {
        operationId: 'listCampaigns',
        tags,
        summary: 'Your campaigns, newest first (the last 100)',
        description: 'Requires `manage:campaigns`. Each with its recipients counted by state.',
        security,
        response: { 200: CampaignList },
      },
    },
    async (request) => {
      const campaigns = owned(db, callerOf(request)).campaigns
      const rows = await campaigns.list()
      return { data: await Promise.all(rows.map((row) => view(campaigns, row))) }
    },
  )

  declareCampaignRoutes(
    app,
    {
      operationPrefix: '',
      base: '/campaigns',
      tags,
      security,
      config,
      describe: (description) => `Requires \`manage:campaigns\`. ${description}`,
      store: (request) => owned(db, callerOf(request)).campaigns,
      controls: ['start', 'pause', 'resume', 'cancel'],
    },
    clock,
  )
}
