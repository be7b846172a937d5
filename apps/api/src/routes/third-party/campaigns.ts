import {
  Campaign,
  CampaignExportQuery,
  CampaignList,
  CampaignParams,
  CampaignRecipientPage,
  CampaignRecipientsQuery,
  CreateCampaignBody,
  Scopes,
} from '@dispatch/contracts'
import { type CampaignRow, owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { EXPORT_RESPONSE, sendExport } from '../../campaigns/export.ts'
import { checkCampaignTemplate, notInState } from '../../campaigns/template.ts'
import { toCampaignView } from '../../campaigns/view.ts'
import { AppError } from '../../errors.ts'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { SCHEDULE_MAX_AHEAD_MS } from '../../sending/accept.ts'

const notFound = () => new AppError('NOT_FOUND', 'Campaign not found')
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

  const own = async (request: { params: { campaignId: string } } & Parameters<typeof callerOf>[0]) => {
    const campaigns = owned(db, callerOf(request)).campaigns
    const row = await campaigns.find(request.params.campaignId)
    if (!row) throw notFound()
    return { row, campaigns }
  }
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

  app.get(
    '/campaigns/:campaignId',
    {
      config,
      schema: {
        operationId: 'getCampaign',
        tags,
        summary: 'A campaign, with its recipients counted by state and its failures by error code',
        description: 'Requires `manage:campaigns`. The counts add up to the audience’s rows.',
        security,
        params: CampaignParams,
        response: { 200: Campaign, ...errorResponses('NOT_FOUND') },
      },
    },
    async (request) => {
      const { row, campaigns } = await own(request)
      return view(campaigns, row)
    },
  )

  const control = (
    path: string,
    operationId: string,
    summary: string,
    description: string,
    act: (
      campaigns: ReturnType<typeof owned>['campaigns'],
      row: CampaignRow,
      now: Date,
    ) => Promise<CampaignRow | undefined>,
    refusal: string,
  ) =>
    app.post(
      `/campaigns/:campaignId/${path}`,
      {
        config,
        schema: {
          operationId,
          tags,
          summary,
          description: `Requires \`manage:campaigns\`. ${description}`,
          security,
          params: CampaignParams,
          response: { 200: Campaign, ...errorResponses('NOT_FOUND', 'INVALID_STATE_TRANSITION') },
        },
      },
      async (request) => {
        const { row, campaigns } = await own(request)
        const changed = await act(campaigns, row, clock())
        if (!changed) {
          const now = await campaigns.find(row.id)
          throw notInState(refusal, now?.status ?? row.status)
        }
        request.log.info({ campaignId: row.id, status: changed.status }, `campaign ${path}`)
        return view(campaigns, changed)
      },
    )

  control(
    'start',
    'startCampaign',
    'Start a campaign whose audience is in',
    'From `ready`: `running` now, or `scheduled` until its `startAt`. Its recipients then go out at `low` priority, ' +
      "a window at a time, within your sender's rate, your key's limits and every consent rule.",
    async (campaigns, row, now) => {
      // An upload that took no row leaves nothing to send: starting it would only complete it.
      if (row.status === 'ready' && row.audience?.taken === 0) {
        throw notInState('its audience took no row: upload one with recipients first', 'ready')
      }
      return campaigns.start(row.id, ['ready'], now)
    },
    'only a campaign whose audience is in (`ready`) can be started',
  )
  control(
    'pause',
    'pauseCampaign',
    'Pause a campaign',
    'From `running` or `scheduled`: no more of its recipients are fed; those already fed go on.',
    (campaigns, row, now) => campaigns.transition(row.id, ['running', 'scheduled'], 'paused', now),
    'only a running or scheduled campaign can be paused',
  )
  control(
    'resume',
    'resumeCampaign',
    'Resume a paused campaign',
    'From `paused`: `running` again (or `scheduled`, while its `startAt` is ahead).',
    (campaigns, row, now) => campaigns.start(row.id, ['paused'], now),
    'only a paused campaign can be resumed',
  )
  control(
    'cancel',
    'cancelCampaign',
    'Cancel a campaign',
    'Its recipients not fed yet end `canceled`, and its messages still waiting are canceled (`cancelReason: ' +
      '"campaign_canceled"`); those a worker already holds go out. Nothing is sent twice.',
    (campaigns, row, now) => campaigns.cancel(row.id, now),
    'a completed or canceled campaign cannot be canceled',
  )

  app.get(
    '/campaigns/:campaignId/recipients',
    {
      config,
      schema: {
        operationId: 'listCampaignRecipients',
        tags,
        summary: "A campaign's recipients in line order, with their state",
        description:
          'Requires `manage:campaigns`. Pages by line: pass the answer’s `next` as `after`. `state` filters.',
        security,
        params: CampaignParams,
        querystring: CampaignRecipientsQuery,
        response: { 200: CampaignRecipientPage, ...errorResponses('NOT_FOUND') },
      },
    },
    async (request) => {
      const { row, campaigns } = await own(request)
      const { state, after, take } = request.query
      return campaigns.recipients(row, { state, after, take })
    },
  )

  app.get(
    '/campaigns/:campaignId/export',
    {
      config,
      schema: {
        operationId: 'exportCampaignRecipients',
        tags,
        summary: 'Every row of a campaign with its outcome, streamed (CSV or NDJSON)',
        description:
          'Requires `manage:campaigns`. In line order: line, phone, userId, state, reason, detail, messageId, ' +
          'errorCode. Read a chunk at a time as the socket takes it.',
        security,
        params: CampaignParams,
        querystring: CampaignExportQuery,
        response: {
          200: EXPORT_RESPONSE,
          ...errorResponses('NOT_FOUND'),
        },
      },
    },
    async (request, reply) => {
      const { row, campaigns } = await own(request)
      const { format, state } = request.query
      return sendExport(reply, request.log, row.id, campaigns.recipientChunks(row, state), format)
    },
  )
}
