import { type AdminOverview, AdminOverview as AdminOverviewSchema, errorMeaning } from '@dispatch/contracts'
import {
  failingWebhookEndpoints,
  listAllSenders,
  type MinuteRow,
  messagesPerMinute,
  type SenderRow,
  topErrorCodes,
} from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { unavailable } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { toSenderView } from './senders.ts'

const HOUR_MS = 3_600_000
/** One overview per instance per this long: an open console polling it costs one set of queries. */
const OVERVIEW_CACHE_MS = 5_000
const HEALTHY_ACCOUNT = new Set(['CONNECTED', 'ACTIVE', 'APPROVED', 'VERIFIED', 'REINSTATED', 'UNBANNED'])

/** A sender an admin should look at: held, or Meta says its quality or account is in trouble. */
export const needsAttention = (sender: SenderRow) =>
  sender.state !== 'active' ||
  sender.qualityRating === 'RED' ||
  sender.qualityRating === 'YELLOW' ||
  (sender.accountStatus !== null && !HEALTHY_ACCOUNT.has(sender.accountStatus.toUpperCase()))

/** The chart's rows, one per minute with data, each status's count. */
function byMinute(rows: MinuteRow[]): AdminOverview['messagesPerMinute'] {
  const minutes = new Map<number, Record<string, number>>()
  for (const row of rows) {
    const at = row.minute.getTime()
    const counts = minutes.get(at) ?? {}
    counts[row.status] = (counts[row.status] ?? 0) + row.count
    minutes.set(at, counts)
  }
  return [...minutes.entries()]
    .sort(([a], [b]) => a - b)
    .map(([at, counts]) => ({ minute: new Date(at).toISOString(), counts }))
}

/**
 * `GET /api/admin/overview`: what an admin looks at first, in one answer, computed at most every
 * five seconds per instance (every open console polls it).
 */
export const adminOverviewRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock, config } = app.deps
  const switchboard = app.queueSwitchboard
  let cached: { at: number; overview: Promise<AdminOverview> } | undefined

  const compute = async (): Promise<AdminOverview> => {
    const now = clock()
    const dayAgo = new Date(now.getTime() - 24 * HOUR_MS)
    const hourAgo = new Date(now.getTime() - HOUR_MS)
    // A message reaching a status in the last day was accepted at most its validity before that.
    const acceptedSince = new Date(dayAgo.getTime() - config.MESSAGE_VALIDITY_SECONDS * 1000)
    const [minutes, queues, senders, endpoints, errors] = await Promise.all([
      messagesPerMinute(db, dayAgo, acceptedSince),
      switchboard.list(),
      listAllSenders(db),
      failingWebhookEndpoints(db, hourAgo),
      topErrorCodes(db, hourAgo),
    ])
    return {
      generatedAt: now.toISOString(),
      messagesPerMinute: byMinute(minutes),
      backlog: queues.filter((queue) => queue.kind === 'sender'),
      sendersNeedingAttention: senders
        .filter(needsAttention)
        .sort((a, b) => a.id.localeCompare(b.id))
        .map((row) => toSenderView(row)),
      failingWebhookEndpoints: endpoints.map((endpoint) => ({
        ...endpoint,
        lastAttemptAt: endpoint.lastAttemptAt.toISOString(),
      })),
      topErrors: errors.map((error) => ({ ...error, meaning: errorMeaning(error.code) })),
    }
  }

  app.get(
    '/',
    {
      schema: {
        operationId: 'getAdminOverview',
        tags: ['admin'],
        summary:
          'The overview: messages per minute, backlog, senders needing attention, failing endpoints, top errors',
        description:
          'Messages per minute by status over the last 24 hours (minutes without a message left out), each ' +
          'sender’s queue, the senders that are held or whose quality or account Meta flags, the webhook ' +
          'endpoints that failed in the last hour and the last hour’s most frequent error codes with what each ' +
          'means. Computed at most every 5 seconds per API instance.',
        security: [{ adminToken: [] }],
        response: {
          200: AdminOverviewSchema,
          ...errorResponses('SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request) => {
      const now = Date.now()
      if (!cached || now - cached.at > OVERVIEW_CACHE_MS) {
        const overview = compute()
        cached = { at: now, overview }
        // A failure is not kept: the next request tries again.
        overview.catch(() => {
          if (cached?.overview === overview) cached = undefined
        })
      }
      try {
        return await cached.overview
      } catch (error) {
        request.log.error({ err: error }, 'overview not computed')
        throw unavailable('compute the overview')
      }
    },
  )
}
