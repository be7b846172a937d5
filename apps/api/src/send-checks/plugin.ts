import { SENDER_CHANGES_CHANNEL, TEMPLATE_CHANGES_CHANNEL } from '@dispatch/contracts'
import { recipientHasher } from '@dispatch/runtime'
import { defaultPhoneNumberId } from '@dispatch/runtime/env'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type Prefetched, SendChecks } from './send-checks.ts'
import { SendRulesCache } from './send-rules-cache.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** A single send's reads, started early (see `SendChecks.prefetch`). */
    prefetched: Prefetched | undefined
  }
  interface FastifyInstance {
    /** Checks sends against the sender's templates and windows before they are queued. */
    sendChecks: SendChecks
    sendRules: SendRulesCache
  }
}

/**
 * The send rules of every sender, kept in this process and current: a sender is reloaded the
 * moment a change to it is announced on `templates:changed` (a sync, a template webhook) or
 * `senders:changed` (an admin's edit), and all are compared every TEMPLATE_CACHE_REFRESH_MS and
 * after the subscriber reconnects (announcements made meanwhile are lost).
 */
export const sendChecks = fp(
  async (app: FastifyInstance) => {
    const { config, db, redis, redisSubscriber } = app.deps
    const cache = new SendRulesCache(db, app.log)
    const channels = new Set(
      [TEMPLATE_CHANGES_CHANNEL, SENDER_CHANGES_CHANNEL].map((name) => `${config.QUEUE_PREFIX}:${name}`),
    )
    const onMessage = (channel: string, senderId: string) => {
      if (channels.has(channel)) void cache.reload(senderId)
    }
    let connectedBefore = false
    const onReady = () => {
      if (connectedBefore) void cache.refresh()
      connectedBefore = true
    }
    redisSubscriber.on('message', onMessage)
    redisSubscriber.on('ready', onReady)
    await redisSubscriber.subscribe(...channels).catch((error: Error) => {
      app.log.warn({ err: error }, 'send-rule change channels not subscribed yet; retries on reconnect')
    })
    await cache.start(config.TEMPLATE_CACHE_REFRESH_MS)
    app.decorateRequest('prefetched', undefined)
    app.decorate('sendRules', cache)
    app.decorate(
      'sendChecks',
      new SendChecks(
        cache,
        redis,
        config.QUEUE_PREFIX,
        app.log,
        defaultPhoneNumberId(config),
        app.deps.recipientHash ?? recipientHasher(config),
      ),
    )
    app.addHook('onClose', async () => {
      cache.stop()
      redisSubscriber.off('message', onMessage)
      redisSubscriber.off('ready', onReady)
    })
  },
  { name: 'send-checks' },
)
