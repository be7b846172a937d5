import { CAMPAIGN_STATUSES, CampaignList } from '@dispatch/contracts'
import {
  apiKeyClientNames,
  type CampaignRow,
  campaignStore,
  listCampaigns,
  recordAdminAction,
} from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import Type from 'typebox'
import { declareCampaignRoutes } from '../../campaigns/routes.ts'
import { toCampaignView } from '../../campaigns/view.ts'

const tags = ['admin']
const security = [{ adminToken: [] }]

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
  const store = campaignStore(db, undefined)
  const clientNames = (ids: string[]) => apiKeyClientNames(db, ids)
  /** A campaign with its key's client name (as the admin's messages carry it). */
  const view = async (row: CampaignRow, names: Map<string, string>) => {
    const clientName = names.get(row.apiKeyId)
    return {
      ...toCampaignView(row, await store.counts(row)),
      ...(clientName === undefined ? {} : { clientName }),
    }
  }

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
      const names = await clientNames(rows.map((row) => row.apiKeyId))
      return { data: await Promise.all(rows.map((row) => view(row, names))) }
    },
  )

  declareCampaignRoutes(
    app,
    {
      operationPrefix: 'admin',
      base: '',
      tags,
      security,
      describe: (description) => description,
      store: () => store,
      clientNames,
      // Starting stays the key's own, as creating and uploading do.
      controls: ['pause', 'resume', 'cancel'],
      changed: (request, control, before, after) =>
        recordAdminAction(db, {
          actor: request.adminName,
          action: `campaign.${control}`,
          targetType: 'campaign',
          targetId: before.id,
          details: { apiKeyId: before.apiKeyId, from: before.status, to: after.status },
        }),
    },
    clock,
  )
}
