import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type CampaignFeeder, startCampaignFeeder } from '../campaigns/feeder.ts'
import type { Prefetched } from '../sending/checks/send-checks.ts'
import { watchSendRules } from '../sending/checks/watch-send-rules.ts'
import { watchSenderPools } from '../sending/pools/pool-cache.ts'
import { createSending, type Sending } from '../sending/sending.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Sending (apps/api/src/sending): what routes hand `submit`, `judge` and the send rules. */
    sending: Sending
    /** This instance's campaign feeder (none with CAMPAIGN_FEED off): a start or resume nudges it. */
    campaignFeeder: CampaignFeeder | undefined
  }
  interface FastifyRequest {
    /**
     * A single send's checks' reads, started by its route's first preHandler (`prefetchChecks`) and
     * handed to `submit` by its handler. A request decoration (one shape for every request), as
     * the idempotency and rate-limit plugins keep their per-request state, not a map beside it.
     */
    prefetchedChecks: Prefetched | undefined
  }
}

/**
 * Builds sending once for the app, its send rules loaded before the first request, kept current
 * (`watchSendRules`) and compared every TEMPLATE_CACHE_REFRESH_MS, the sender pools likewise
 * (`watchSenderPools`); and, unless CAMPAIGN_FEED is
 * off, the campaign feeder (campaigns/feeder.ts).
 */
export const sending = fp(
  async (app: FastifyInstance) => {
    const { config, redisSubscriber } = app.deps
    const built = createSending(app.deps)
    const unwatch = await watchSendRules(built.rules, redisSubscriber, config.QUEUE_PREFIX, app.log)
    const unwatchPools = await watchSenderPools(built.pools, redisSubscriber, config.QUEUE_PREFIX, app.log)
    await Promise.all([
      built.rules.start(config.TEMPLATE_CACHE_REFRESH_MS),
      built.pools.start(config.TEMPLATE_CACHE_REFRESH_MS),
    ])
    app.decorate('sending', built)
    app.decorateRequest('prefetchedChecks', undefined)
    // Campaigns are sends too: fed through `submit` by whichever instance holds each one's lease.
    const feeder = config.CAMPAIGN_FEED
      ? startCampaignFeeder(built, app.deps.redis, {
          window: config.CAMPAIGN_WINDOW,
          intervalMs: config.CAMPAIGN_FEED_INTERVAL_MS,
          progressSeconds: config.CAMPAIGN_PROGRESS_SECONDS,
        })
      : undefined
    app.decorate('campaignFeeder', feeder)
    app.addHook('onClose', async () => {
      await feeder?.stop()
      built.rules.stop()
      built.pools.stop()
      unwatch()
      unwatchPools()
    })
  },
  { name: 'sending' },
)
