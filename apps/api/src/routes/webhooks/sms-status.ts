import { SmsStatusCallback } from '@dispatch/contracts'
import { applySmsStatus, type Sql } from '@dispatch/db'
import { isTwilioSignature, smsPriceOf } from '@dispatch/runtime/sms'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'

/**
 * The SMS provider's delivery reports of the channel fallback's SMS (docs/fallback.md, "Delivery
 * reports"): form-encoded, signed as Twilio signs them (`X-Twilio-Signature`) against the public
 * URL the provider was given (SMS_STATUS_CALLBACK_URL), not the one the request reached, which a
 * proxy may have rewritten. Registered only when the auth token and that URL are configured.
 */
export const smsStatusRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config, db, clock } = app.deps
  const authToken = config.SMS_AUTH_TOKEN
  const publicUrl = config.SMS_STATUS_CALLBACK_URL
  if (!authToken || !publicUrl) return
  const signatureInvalid = () =>
    new AppError('WEBHOOK_SIGNATURE_INVALID', 'The X-Twilio-Signature header does not match the request')

  // The signature covers every parameter as sent: it is checked on them, before validation.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (request, body, done) => {
      const params = Object.fromEntries(new URLSearchParams(body as string))
      const signature = request.headers['x-twilio-signature']
      if (typeof signature !== 'string' || !isTwilioSignature(signature, authToken, publicUrl, params)) {
        done(signatureInvalid(), undefined)
        return
      }
      done(null, params)
    },
  )

  app.post(
    '/status',
    {
      // A request with no form body never meets the parser above: refused before validation.
      preValidation: async (request) => {
        if (!request.headers['content-type']?.startsWith('application/x-www-form-urlencoded')) {
          throw signatureInvalid()
        }
      },
      schema: {
        operationId: 'receiveSmsStatus',
        tags: ['webhooks'],
        summary: 'SMS provider delivery reports (the channel fallback’s SMS)',
        // Authenticated by X-Twilio-Signature, not by a security scheme.
        security: [],
        consumes: ['application/x-www-form-urlencoded'],
        body: SmsStatusCallback,
        response: {
          204: { description: 'Applied, or already known', type: 'null' },
          ...errorResponses('VALIDATION_ERROR', 'WEBHOOK_SIGNATURE_INVALID'),
        },
      },
    },
    async (request, reply) => {
      const { MessageSid, MessageStatus, ErrorCode } = request.body
      const price = smsPriceOf(request.body.Price, request.body.PriceUnit)
      const moved = await applySmsStatus(db.$client as Sql, {
        providerMessageId: MessageSid,
        status: MessageStatus,
        errorCode: ErrorCode || undefined,
        ...(price ? { price } : {}),
        at: clock(),
      })
      // A duplicate, late or unknown report is acknowledged too: the provider retries anything else.
      request.log.info({ applied: moved !== undefined, status: MessageStatus }, 'sms status processed')
      return reply.code(204).send(null)
    },
  )
}
