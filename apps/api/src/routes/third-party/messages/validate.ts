import {
  BATCH_MAX_ITEMS,
  type ValidateAnswer,
  ValidateAnswer as ValidateAnswerSchema,
  ValidateBody,
} from '@dispatch/contracts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError, errorBody } from '../../../errors.ts'
import { errorResponses } from '../../../http/error-responses.ts'
import { answerEachItem, judge, SEND_ITEM_SCOPES } from '../../../sending/judge.ts'
import { SCOPE_IN_ROUTE } from '../../authenticate.ts'
import type { MessageRouteOptions } from './send.ts'

const failure = (error: AppError) => errorBody(error.errorCode, error.statusCode, error.message)

/**
 * Answers what a send (or a batch) would, and sends nothing: no message stored, no rate or quota
 * spent. The same judge as the real routes, so a `valid: true` here is a 202 there (the window and
 * the catalog may change in between).
 */
export const validateMessageRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  const { config } = app.deps
  const { sending } = app

  app.post(
    '/validate',
    {
      config: { scope: SCOPE_IN_ROUTE, scopesInRoute: SEND_ITEM_SCOPES },
      bodyLimit: config.BATCH_BODY_LIMIT_BYTES,
      schema: {
        operationId: 'validateMessages',
        hide: options.hide,
        tags: ['messages'],
        summary: 'Check a send (or a batch) as it would be checked, without sending anything',
        description:
          'Takes one send with its `type` (`{type: "template", phone, templateId, language, …}`) or a batch ' +
          '(`{messages: [...]}`) and answers 200 with `{valid: true}` or the error body a real send would ' +
          'answer (`{valid: false, error}`); for a batch, one result per item. Validation, scopes, ' +
          'priority, the sender’s templates and the 24-hour window are all checked; nothing is queued ' +
          'and no rate or quota is spent.',
        body: ValidateBody,
        response: {
          200: ValidateAnswerSchema,
          ...errorResponses('VALIDATION_ERROR', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'),
        },
      },
    },
    async (request): Promise<ValidateAnswer> => {
      const body = request.body as Record<string, unknown>
      const batch = Object.hasOwn(body, 'messages')
      const list = batch ? body.messages : [body]
      if (!Array.isArray(list) || list.length === 0 || list.length > BATCH_MAX_ITEMS) {
        throw new AppError(
          'VALIDATION_ERROR',
          `body.messages must be an array of 1 to ${BATCH_MAX_ITEMS} sends`,
        )
      }
      if (batch && Object.keys(body).length > 1) {
        throw new AppError('VALIDATION_ERROR', 'body must be one send with its type, or {messages} alone')
      }
      const now = sending.clock()
      const judged = await answerEachItem(
        list,
        (index) => (batch ? `body.messages[${index}]` : 'body'),
        request.apiKey.scopes,
        (sends) => judge(sending, request.apiKey, sends, { now }),
      )
      if (!batch) {
        const [only] = judged
        return only && 'error' in only ? { valid: false, error: failure(only.error) } : { valid: true }
      }
      const results = judged.map((j, index) =>
        'error' in j
          ? { index, valid: false as const, error: failure(j.error) }
          : { index, valid: true as const },
      )
      return { valid: results.every((r) => r.valid), results }
    },
  )
}
