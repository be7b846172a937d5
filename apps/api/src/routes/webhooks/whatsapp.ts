import { timingSafeEqual } from 'node:crypto'
import { UNDELIVERABLE_CODE, WhatsAppVerifyQuery, WhatsAppWebhook } from '@dispatch/contracts'
import { applyPlatformStatusTo, recordInboundMessage, recordMessagePricing } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { applyConsentKeywords } from '../../consent/keywords.ts'
import { applyUserPreferences, readUserPreferences } from '../../consent/user-preferences.ts'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { stickToRepliedNumbers } from '../../sending/pools/on-reply.ts'
import { applyAccountUpdates, readAccountUpdates } from './account-updates.ts'
import { toStorableJson } from './platform-text.ts'
import { applyQualityUpdates, readQualityUpdates } from './quality-updates.ts'
import { openServiceWindows } from './service-windows.ts'
import { applyTemplateUpdates, readTemplateUpdates } from './template-updates.ts'
import {
  recordedUndeliverable,
  releaseUndeliverableHolds,
  UndeliverableFallbacks,
} from './undeliverable-fallback.ts'
import { readInboundMessages } from './whatsapp-messages.ts'
import { signatureHeader, signatureMatches, signatureWellFormed } from './whatsapp-signature.ts'
import { readStatusUpdates } from './whatsapp-statuses.ts'

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: Buffer
  }
}

/**
 * The WhatsApp Cloud API's webhook: the subscription handshake (GET) and signed deliveries (POST)
 * whose status changes move messages forward and whose messages are replies, stored and routed to
 * the key whose conversation they belong to. Each half is on only when its secret is configured.
 */
export const whatsappWebhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config, db, clock } = app.deps
  let fallbacks: UndeliverableFallbacks | undefined
  const undeliverable = () => {
    fallbacks ??= new UndeliverableFallbacks(app.deps)
    return fallbacks
  }
  app.addHook('onClose', async () => {
    await fallbacks?.close()
  })
  const verifyToken = config.WHATSAPP_VERIFY_TOKEN
  const appSecret = config.WHATSAPP_APP_SECRET

  if (verifyToken) {
    app.get(
      '/',
      {
        schema: {
          operationId: 'verifyWhatsAppWebhook',
          tags: ['webhooks'],
          summary: 'WhatsApp webhook subscription handshake',
          // The verify token in the query string is the check, not a security scheme.
          security: [],
          querystring: WhatsAppVerifyQuery,
          response: {
            // The challenge echoed as plain text, as Meta expects it.
            200: { description: 'The challenge', content: { 'text/plain': { schema: { type: 'string' } } } },
            ...errorResponses('VALIDATION_ERROR', 'WEBHOOK_VERIFY_TOKEN_INVALID'),
          },
        },
      },
      async (request, reply) => {
        const query = request.query
        const given = Buffer.from(query['hub.verify_token'])
        const expected = Buffer.from(verifyToken)
        if (
          query['hub.mode'] !== 'subscribe' ||
          given.length !== expected.length ||
          !timingSafeEqual(given, expected)
        ) {
          throw new AppError('WEBHOOK_VERIFY_TOKEN_INVALID', 'The verify token does not match')
        }
        return reply.type('text/plain; charset=utf-8').send(query['hub.challenge'])
      },
    )
  }

  if (!appSecret) return
  const signatureInvalid = () =>
    new AppError('WEBHOOK_SIGNATURE_INVALID', 'The X-Hub-Signature-256 header does not match the body')
  // The signature covers the exact bytes Meta sent: it is checked on them, before any parsing, so a
  // body that is not Meta's (up to the 1 MiB limit) costs an HMAC, never a JSON parse. The parsed
  // body's strings are made storable (NUL and lone surrogates become U+FFFD) before anything reads them.
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (!signatureMatches(appSecret, body as Buffer, signatureHeader(request.raw.rawHeaders))) {
      done(signatureInvalid(), undefined)
      return
    }
    request.rawBody = body as Buffer
    let parsed: unknown
    try {
      parsed = JSON.parse((body as Buffer).toString('utf8'))
    } catch {
      done(new AppError('VALIDATION_ERROR', 'The request body is not valid JSON'), undefined)
      return
    }
    done(null, toStorableJson(parsed))
  })

  app.post(
    '/',
    {
      // Meta batches status changes; allow more than the send endpoints' 64 KiB.
      bodyLimit: 1024 * 1024,
      // No signature, or none shaped like one: refused before a byte of the body is read.
      onRequest: (request, _reply, done) => {
        done(signatureWellFormed(signatureHeader(request.raw.rawHeaders)) ? undefined : signatureInvalid())
      },
      // A body was checked by the parser above, before it was parsed; a request without one (which
      // the parser never sees) is refused here, before validation says what was wrong with it.
      preValidation: async (request) => {
        if (!request.rawBody) throw signatureInvalid()
      },
      schema: {
        operationId: 'receiveWhatsAppWebhook',
        tags: ['webhooks'],
        summary: 'WhatsApp webhook deliveries (message status changes, replies, number quality updates)',
        // Authenticated by the body's X-Hub-Signature-256, not by a security scheme.
        security: [],
        body: WhatsAppWebhook,
        response: {
          200: { type: 'object', properties: { received: { type: 'boolean' } } },
          ...errorResponses('VALIDATION_ERROR', 'WEBHOOK_SIGNATURE_INVALID'),
        },
      },
    },
    async (request) => {
      const now = clock()
      const { updates, skipped: skippedStatuses } = readStatusUpdates(request.body, now)
      const { messages, skipped: skippedMessages } = readInboundMessages(request.body, now)
      const { updates: qualityUpdates, skipped: skippedQuality } = readQualityUpdates(request.body)
      const { updates: templateUpdates, skipped: skippedTemplates } = readTemplateUpdates(request.body, now)
      const { updates: accountUpdates, skipped: skippedAccounts } = readAccountUpdates(request.body)
      const skipped = [
        ...skippedStatuses,
        ...skippedMessages,
        ...skippedQuality,
        ...skippedTemplates,
        ...skippedAccounts,
      ]
      if (skipped.length > 0) {
        // Positions and reasons only: item values may carry phone numbers (a wamid encodes one).
        request.log.warn(
          { skipped: skipped.length, items: skipped.slice(0, 20) },
          'whatsapp webhook items skipped',
        )
      }
      let applied = 0
      const delivered: string[] = []
      for (const update of updates) {
        const moved = await applyPlatformStatusTo(db, update)
        if (moved) applied++
        // Undeliverable: its fallback (if it carries one) goes now, from a worker, only once the
        // `failed` is committed. A failure here answers 5xx; Meta's redelivery moves nothing, and
        // finds the message (by our id) recorded failed with 131026, and its timer, again.
        const deliveredId = moved ?? update.messageId
        if ((update.status === 'delivered' || update.status === 'read') && deliveredId)
          delivered.push(deliveredId)
        if (update.status === 'failed' && update.error?.code === UNDELIVERABLE_CODE) {
          const failedId = moved ?? (await recordedUndeliverable(db, update.messageId))
          if (failedId) await undeliverable().promote(failedId)
        }
        if (!update.pricing) continue
        const priced = await recordMessagePricing(
          db,
          update.platformMessageId,
          update.pricing,
          update.messageId,
        )
        if (priced)
          app.metrics?.priced(priced.senderId ?? 'default', update.pricing.category, update.pricing.billable)
      }
      // Delivered: nothing of the message stays in Redis for a 131026 that cannot come (after the
      // statuses are recorded; a failure answers 5xx and Meta's redelivery lets go again).
      await releaseUndeliverableHolds(app.deps, delivered)
      const replies = { routed: 0, unrouted: 0, duplicate: 0 }
      for (const message of messages) {
        const recorded = await recordInboundMessage(db, message)
        // The window opens for every identity the user is known by (its phone and BSUID alike).
        Object.assign(message, recorded.identity)
        if (recorded.outcome === 'duplicate') replies.duplicate++
        else if (recorded.apiKeyId) replies.routed++
        else replies.unrouted++
      }
      await openServiceWindows(app.deps, request.log, messages, now)
      // A user who wrote to a pool's number sticks to it (sending/pools/on-reply.ts).
      await stickToRepliedNumbers(app.sending, messages, now.getTime())
      // After the replies are stored: a failure here answers 5xx, and Meta's redelivery applies it again.
      const consent = await applyConsentKeywords(app, request.log, messages, now)
      const preferences = readUserPreferences(request.body)
      const preferencesApplied = await applyUserPreferences(app, request.log, preferences.preferences, now)
      await applyQualityUpdates(app.deps, request.log, qualityUpdates, now)
      await applyAccountUpdates(app.deps, request.log, accountUpdates, now)
      const templates = await applyTemplateUpdates(app.deps, request.log, templateUpdates, (id) =>
        app.sending.rules.reload(id),
      )
      // Skipped, unknown and stale items are acknowledged too: Meta retries anything but a 200 for days.
      // Counts only: never a phone number or a reply's text.
      request.log.info(
        {
          applied,
          ignored: updates.length - applied,
          replies,
          consent: { ...consent, preferences: preferencesApplied, preferencesSkipped: preferences.skipped },
          templates: templates.applied,
          skipped: skipped.length,
        },
        'whatsapp webhook processed',
      )
      return { received: true }
    },
  )
}
