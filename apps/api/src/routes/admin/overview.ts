import {
  type AdminOverview,
  AdminOverviewQuery,
  AdminOverview as AdminOverviewSchema,
  errorMeaning,
  OVERVIEW_RANGES,
  type OverviewRange,
} from '@dispatch/contracts'
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
import { toSenderView } from '../../senders/views.ts'

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
  const cached = new Map<OverviewRange, { at: number; overview: Promise<AdminOverview> }>()

  const compute = async (range: OverviewRange): Promise<AdminOverview> => {
    const now = clock()
    const { bucketSeconds, spanSeconds } = OVERVIEW_RANGES[range]
    const spanMs = spanSeconds * 1000
    // From the start of the bucket the range's first moment falls in: the first bucket is whole.
    const since = new Date(
      Math.floor((now.getTime() - spanMs) / (bucketSeconds * 1000)) * bucketSeconds * 1000,
    )
    const hourAgo = new Date(now.getTime() - HOUR_MS)
    // A message reaching a status in the range was accepted at most its validity before it.
    const acceptedSince = new Date(since.getTime() - config.MESSAGE_VALIDITY_SECONDS * 1000)
    const [minutes, queues, senders, endpoints, errors] = await Promise.all([
      messagesPerMinute(db, since, acceptedSince, bucketSeconds, { until: now }),
      switchboard.list(),
      listAllSenders(db),
      failingWebhookEndpoints(db, hourAgo),
      topErrorCodes(db, hourAgo),
    ])
    return {
      generatedAt: now.toISOString(),
      range,
      bucketSeconds,
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
          'Messages by status over the last hour (by minute), 24 hours (by quarter hour, the default) or 7 days ' +
          '(by hour), `range`; buckets without a message left out. Each ' +
          'sender’s queue, the senders that are held or whose quality or account Meta flags, the webhook ' +
          'endpoints that failed in the last hour and the last hour’s most frequent error codes with what each ' +
          'means. Computed at most every 5 seconds per API instance.',
        security: [{ adminToken: [] }],
        querystring: AdminOverviewQuery,
        response: {
          200: AdminOverviewSchema,
          ...errorResponses('VALIDATION_ERROR', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request) => {
      const now = Date.now()
      const range = request.query.range ?? '24h'
      let entry = cached.get(range)
      if (!entry || now - entry.at > OVERVIEW_CACHE_MS) {
        const overview = compute(range)
        entry = { at: now, overview }
        cached.set(range, entry)
        // A failure is not kept: the next request tries again.
        overview.catch(() => {
          if (cached.get(range)?.overview === overview) cached.delete(range)
        })
      }
      try {
        return await entry.overview
      } catch (error) {
        request.log.error({ err: error }, 'overview not computed')
        throw unavailable('compute the overview')
      }
    },
  )
}
