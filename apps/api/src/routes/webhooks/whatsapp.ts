import { timingSafeEqual } from 'node:crypto'
import { WhatsAppVerifyQuery, WhatsAppWebhook } from '@dispatch/contracts'
import { applyPlatformStatus, type PlatformStatus } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../responses.ts'
import { signatureHeader, signatureMatches } from './whatsapp-signature.ts'

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: Buffer
  }
}

const PLATFORM_STATUSES = new Set<string>(['sent', 'delivered', 'read', 'failed'])

/**
 * The WhatsApp Cloud API's webhook: the subscription handshake (GET) and signed deliveries (POST)
 * whose status changes move messages forward. Each half is on only when its secret is configured.
 */
export const whatsappWebhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config, db } = app.deps
  const verifyToken = config.WHATSAPP_VERIFY_TOKEN
  const appSecret = config.WHATSAPP_APP_SECRET

  if (verifyToken) {
    app.get(
      '/',
      {
        schema: {
          tags: ['webhooks'],
          summary: 'WhatsApp webhook subscription handshake',
          querystring: WhatsAppVerifyQuery,
          response: {
            200: { type: 'string' },
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
  // The signature covers the exact bytes Meta sent, so keep them beside the parsed body.
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    request.rawBody = body as Buffer
    try {
      done(null, JSON.parse((body as Buffer).toString('utf8')))
    } catch {
      done(new AppError('VALIDATION_ERROR', 'The request body is not valid JSON'), undefined)
    }
  })

  app.post(
    '/',
    {
      // Meta batches status changes; allow more than the send endpoints' 64 KiB.
      bodyLimit: 1024 * 1024,
      // Checked before validation: an unsigned body is refused without saying what was wrong with it.
      preValidation: async (request) => {
        if (
          !request.rawBody ||
          !signatureMatches(appSecret, request.rawBody, signatureHeader(request.raw.rawHeaders))
        ) {
          throw new AppError(
            'WEBHOOK_SIGNATURE_INVALID',
            'The X-Hub-Signature-256 header does not match the body',
          )
        }
      },
      schema: {
        tags: ['webhooks'],
        summary: 'WhatsApp webhook deliveries (message status changes)',
        body: WhatsAppWebhook,
        response: {
          200: { type: 'object', properties: { received: { type: 'boolean' } } },
          ...errorResponses('VALIDATION_ERROR', 'WEBHOOK_SIGNATURE_INVALID'),
        },
      },
    },
    async (request) => {
      let applied = 0
      let ignored = 0
      for (const entry of request.body.entry) {
        for (const change of entry.changes) {
          for (const status of change.value.statuses ?? []) {
            if (!PLATFORM_STATUSES.has(status.status)) {
              ignored++
              continue
            }
            const error = status.errors?.[0]
            const moved = await applyPlatformStatus(db, {
              platformMessageId: status.id,
              status: status.status as PlatformStatus,
              at: new Date(Number(status.timestamp) * 1000),
              ...(error
                ? { error: { code: String(error.code), message: error.message ?? error.title ?? '' } }
                : {}),
            })
            if (moved) applied++
            else ignored++
          }
        }
      }
      // Unknown or stale ids are acknowledged too: Meta retries anything but a 200 for days.
      request.log.info({ applied, ignored }, 'whatsapp webhook processed')
      return { received: true }
    },
  )
}
