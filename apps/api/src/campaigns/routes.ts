import {
  Campaign,
  CampaignExportQuery,
  CampaignParams,
  CampaignRecipientPage,
  CampaignRecipientsQuery,
} from '@dispatch/contracts'
import type { CampaignRow, CampaignStore } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { AppError } from '../errors.ts'
import { errorResponses } from '../http/error-responses.ts'
import { EXPORT_RESPONSE, sendExport } from './export.ts'
import { notInState } from './template.ts'
import { toCampaignView } from './view.ts'

type App = Parameters<FastifyPluginAsyncTypebox>[0]
type Control = 'start' | 'pause' | 'resume' | 'cancel'

/** The controls: the states each is taken from, and what it says when the campaign is in another. */
const CONTROLS: Record<
  Control,
  {
    summary: string
    description: string
    refusal: string
    act: (store: CampaignStore, row: CampaignRow, now: Date) => Promise<CampaignRow | undefined>
  }
> = {
  start: {
    summary: 'Start a campaign whose audience is in',
    description:
      'From `ready`: `running` now, or `scheduled` until its `startAt`. Its recipients then go out at `low` ' +
      "priority, a window at a time, within the sender's rate, the key's limits and every consent rule.",
    refusal: 'only a campaign whose audience is in (`ready`) can be started',
    act: async (store, row, now) => {
      // An upload that took no row leaves nothing to send: starting it would only complete it.
      if (row.status === 'ready' && row.audience?.taken === 0) {
        throw notInState('its audience took no row: upload one with recipients first', 'ready')
      }
      return store.start(row.id, ['ready'], now)
    },
  },
  pause: {
    summary: 'Pause a campaign',
    description: 'From `running` or `scheduled`: no more of its recipients are fed; those already fed go on.',
    refusal: 'only a running or scheduled campaign can be paused',
    act: (store, row, now) => store.transition(row.id, ['running', 'scheduled'], 'paused', now),
  },
  resume: {
    summary: 'Resume a paused campaign',
    description: 'From `paused`: `running` again (or `scheduled`, while its `startAt` is ahead).',
    refusal: 'only a paused campaign can be resumed',
    act: (store, row, now) => store.start(row.id, ['paused'], now),
  },
  cancel: {
    summary: 'Cancel a campaign',
    description:
      'Its recipients not fed yet end `canceled`, and its messages still waiting are canceled (`cancelReason: ' +
      '"campaign_canceled"`); those a worker already holds go out. Nothing is sent twice.',
    refusal: 'a completed or canceled campaign cannot be canceled',
    act: (store, row, now) => store.cancel(row.id, now),
  },
}

/** How one side (a key's own campaigns, or an admin's view of every key's) declares the routes. */
export interface CampaignSide {
  /** `''` for the key's routes, `'admin'` for the admin's: prefixes each operationId. */
  operationPrefix: '' | 'admin'
  /** The path before `/:campaignId` (`/campaigns` for keys; `` under the admin's `/campaigns` prefix). */
  base: string
  tags: string[]
  security: Array<Record<string, string[]>>
  /** The route config (a key's scope). */
  config?: { scope: string }
  /** Each description as this side says it (a key's: the scope it needs first). */
  describe: (description: string) => string
  /** The campaigns the request may reach. */
  store: (request: FastifyRequest) => CampaignStore
  controls: readonly Control[]
  /** The client names of these keys, by id: given, each campaign answered carries its key's (the admin's). */
  clientNames?: (apiKeyIds: string[]) => Promise<Map<string, string>>
  /** After a control changed a campaign (the admin's audit). */
  changed?: (
    request: FastifyRequest,
    control: Control,
    before: CampaignRow,
    after: CampaignRow,
  ) => Promise<void>
}

const operationId = (side: CampaignSide, name: string) =>
  side.operationPrefix ? `admin${name[0]?.toUpperCase()}${name.slice(1)}` : name

/**
 * A campaign's routes that keys and admins share, each reaching the campaigns `side.store` gives
 * (a key: its own, another key's id `404` as an unknown one): read one, its controls, its
 * recipients, its export.
 */
export function declareCampaignRoutes(app: App, side: CampaignSide, clock: () => Date) {
  const { tags, security } = side
  const config = side.config ? { config: side.config } : {}
  const find = async (request: FastifyRequest & { params: { campaignId: string } }) => {
    const store = side.store(request)
    const row = await store.find(request.params.campaignId)
    if (!row) throw new AppError('NOT_FOUND', 'Campaign not found')
    return { row, store }
  }
  const view = async (store: CampaignStore, row: CampaignRow) => {
    const [counts, names] = await Promise.all([store.counts(row), side.clientNames?.([row.apiKeyId])])
    const clientName = names?.get(row.apiKeyId)
    return { ...toCampaignView(row, counts), ...(clientName === undefined ? {} : { clientName }) }
  }

  app.get(
    `${side.base}/:campaignId`,
    {
      ...config,
      schema: {
        operationId: operationId(side, 'getCampaign'),
        tags,
        summary: 'A campaign, with its recipients counted by state and its failures by error code',
        description: side.describe('The counts add up to the audience’s rows.'),
        security,
        params: CampaignParams,
        response: { 200: Campaign, ...errorResponses('NOT_FOUND') },
      },
    },
    async (request) => {
      const { row, store } = await find(request)
      return view(store, row)
    },
  )

  for (const control of side.controls) {
    const { summary, description, refusal, act } = CONTROLS[control]
    app.post(
      `${side.base}/:campaignId/${control}`,
      {
        ...config,
        schema: {
          operationId: operationId(side, `${control}Campaign`),
          tags,
          summary,
          description: side.describe(description) + (side.changed ? ' Audited.' : ''),
          security,
          params: CampaignParams,
          response: { 200: Campaign, ...errorResponses('NOT_FOUND', 'INVALID_STATE_TRANSITION') },
        },
      },
      async (request) => {
        const { row, store } = await find(request)
        const changed = await act(store, row, clock())
        if (!changed) throw notInState(refusal, (await store.find(row.id))?.status ?? row.status)
        await side.changed?.(request, control, row, changed)
        request.log.info({ campaignId: row.id, status: changed.status }, `campaign ${control}`)
        // Fed from this instance's next turn, not an interval later (another instance's lease on
        // it, if any, still decides who feeds it).
        if (changed.status === 'running') request.server.campaignFeeder?.nudge()
        return view(store, changed)
      },
    )
  }

  app.get(
    `${side.base}/:campaignId/recipients`,
    {
      ...config,
      schema: {
        operationId: operationId(side, 'listCampaignRecipients'),
        tags,
        summary: "A campaign's recipients in line order, with their state",
        description: side.describe('Pages by line: pass the answer’s `next` as `after`. `state` filters.'),
        security,
        params: CampaignParams,
        querystring: CampaignRecipientsQuery,
        response: { 200: CampaignRecipientPage, ...errorResponses('NOT_FOUND') },
      },
    },
    async (request) => {
      const { row, store } = await find(request)
      const { state, after, take } = request.query
      return store.recipients(row, { state, after, take })
    },
  )

  app.get(
    `${side.base}/:campaignId/export`,
    {
      ...config,
      schema: {
        operationId: operationId(side, 'exportCampaignRecipients'),
        tags,
        summary: 'Every row of a campaign with its outcome, streamed (CSV or NDJSON)',
        description: side.describe(
          'In line order: line, phone, userId, state, reason, detail, messageId, errorCode. Read a chunk at a ' +
            'time as the socket takes it.',
        ),
        security,
        params: CampaignParams,
        querystring: CampaignExportQuery,
        response: { 200: EXPORT_RESPONSE, ...errorResponses('NOT_FOUND') },
      },
    },
    async (request, reply) => {
      const { row, store } = await find(request)
      const { format, state } = request.query
      return sendExport(reply, request.log, row.id, store.recipientChunks(row, state), format)
    },
  )
}
