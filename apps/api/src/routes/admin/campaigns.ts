import {
  CAMPAIGN_STATUSES,
  Campaign,
  CampaignExportQuery,
  CampaignList,
  CampaignParams,
  CampaignRecipientPage,
  CampaignRecipientsQuery,
  type CampaignStatus,
} from '@dispatch/contracts'
import {
  type CampaignRow,
  campaignCounts,
  campaignRecipientChunks,
  campaignRecipientsPage,
  cancelCampaign,
  findCampaign,
  listCampaigns,
  recordAdminAction,
  startCampaign,
  transitionCampaign,
} from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import Type from 'typebox'
import { EXPORT_RESPONSE, sendExport } from '../../campaigns/export.ts'
import { notInState } from '../../campaigns/template.ts'
import { toCampaignView } from '../../campaigns/view.ts'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'

const tags = ['admin']
const security = [{ adminToken: [] }]
const notFound = () => new AppError('NOT_FOUND', 'Campaign not found')

const AdminCampaignListQuery = Type.Object(
  {
    apiKeyId: Type.Optional(Type.String({ format: 'uuid' })),
    status: Type.Optional(Type.Enum(CAMPAIGN_STATUSES)),
  },
  { additionalProperties: false },
)

/**
 * `/api/admin/campaigns`: every key's campaigns, read and controlled by an admin (pause, resume,
 * cancel: each audited). Creating and uploading stay the key's own (third-party/campaigns.ts).
 */
export const adminCampaignRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock } = app.deps
  const find = async (id: string) => {
    const row = await findCampaign(db, id)
    if (!row) throw notFound()
    return row
  }
  const view = async (row: CampaignRow) => toCampaignView(row, await campaignCounts(db, row))

  app.get(
    '/',
    {
      schema: {
        operationId: 'adminListCampaigns',
        tags,
        summary: "Every key's campaigns, newest first (the last 100)",
        security,
        querystring: AdminCampaignListQuery,
        response: { 200: CampaignList },
      },
    },
    async (request) => {
      const { apiKeyId, status } = request.query
      const rows = await listCampaigns(db, {
        ...(apiKeyId ? { apiKeyId: apiKeyId.toLowerCase() } : {}),
        ...(status ? { status } : {}),
      })
      return { data: await Promise.all(rows.map(view)) }
    },
  )

  app.get(
    '/:campaignId',
    {
      schema: {
        operationId: 'adminGetCampaign',
        tags,
        summary: 'A campaign of any key, with its recipients counted by state',
        security,
        params: CampaignParams,
        response: { 200: Campaign, ...errorResponses('NOT_FOUND') },
      },
    },
    async (request) => view(await find(request.params.campaignId)),
  )

  const control = (
    path: 'pause' | 'resume' | 'cancel',
    summary: string,
    act: (row: CampaignRow, now: Date) => Promise<CampaignRow | undefined>,
    refusal: string,
  ) =>
    app.post(
      `/:campaignId/${path}`,
      {
        schema: {
          operationId: `admin${path[0]?.toUpperCase()}${path.slice(1)}Campaign`,
          tags,
          summary,
          description: 'Audited. The same rules as the key’s own route.',
          security,
          params: CampaignParams,
          response: { 200: Campaign, ...errorResponses('NOT_FOUND', 'INVALID_STATE_TRANSITION') },
        },
      },
      async (request) => {
        const row = await find(request.params.campaignId)
        const changed = await act(row, clock())
        if (!changed) throw notInState(refusal, (await findCampaign(db, row.id))?.status ?? row.status)
        await recordAdminAction(db, {
          actor: request.adminName,
          action: `campaign.${path}`,
          targetType: 'campaign',
          targetId: row.id,
          details: { apiKeyId: row.apiKeyId, from: row.status, to: changed.status },
        })
        request.log.info({ campaignId: row.id, actor: request.adminName }, `campaign ${path} by an admin`)
        return view(changed)
      },
    )
  const pausable: CampaignStatus[] = ['running', 'scheduled']
  control(
    'pause',
    "Pause a key's campaign",
    (row, now) => transitionCampaign(db, row.id, pausable, 'paused', now),
    'only a running or scheduled campaign can be paused',
  )
  control(
    'resume',
    "Resume a key's paused campaign",
    (row, now) => startCampaign(db, row.id, ['paused'], now),
    'only a paused campaign can be resumed',
  )
  control(
    'cancel',
    "Cancel a key's campaign",
    (row, now) => cancelCampaign(db, row.id, now),
    'a completed or canceled campaign cannot be canceled',
  )

  app.get(
    '/:campaignId/recipients',
    {
      schema: {
        operationId: 'adminListCampaignRecipients',
        tags,
        summary: "A campaign's recipients in line order, with their state",
        security,
        params: CampaignParams,
        querystring: CampaignRecipientsQuery,
        response: { 200: CampaignRecipientPage, ...errorResponses('NOT_FOUND') },
      },
    },
    async (request) => {
      const row = await find(request.params.campaignId)
      const { state, after, take } = request.query
      return campaignRecipientsPage(db, row, { state, after, take })
    },
  )

  app.get(
    '/:campaignId/export',
    {
      schema: {
        operationId: 'adminExportCampaignRecipients',
        tags,
        summary: 'Every row of a campaign with its outcome, streamed (CSV or NDJSON)',
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
      const row = await find(request.params.campaignId)
      const { format, state } = request.query
      return sendExport(reply, request.log, row.id, campaignRecipientChunks(db, row, state), format)
    },
  )
}
