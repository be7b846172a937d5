import { TenantForbidden } from '@dispatch/db'
import { isOutage } from '@dispatch/runtime/outages'
import type { ErrorObject } from 'ajv'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, errorBody, unavailable } from '../errors.ts'
import { describeValidationError } from './validation.ts'

/** Fastify's own errors that a client caused, mapped to our codes. */
const fastifyCodes: Record<string, { errorCode: string; message?: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { errorCode: 'VALIDATION_ERROR', message: 'Body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    errorCode: 'VALIDATION_ERROR',
    message: 'Body is empty but Content-Type is application/json',
  },
  FST_ERR_CTP_BODY_TOO_LARGE: {
    errorCode: 'PAYLOAD_TOO_LARGE',
    message: 'Body is larger than this endpoint accepts',
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    errorCode: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'Content-Type must be application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    errorCode: 'VALIDATION_ERROR',
    message: 'Content-Length does not match the body',
  },
  FST_ERR_CTP_INVALID_TYPE: {
    errorCode: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'Content-Type must be application/json',
  },
}

/** Renders every failure, from every route, as the spec's error body; 5xx details stay in the log. */
export function installErrorHandler(app: FastifyInstance) {
  app.setNotFoundHandler((request, reply) => {
    reply
      .code(404)
      .send(errorBody('NOT_FOUND', 404, `Route ${request.method} ${request.url.split('?')[0]} not found`))
  })

  app.setErrorHandler((caught: FastifyError | AppError, request, reply) => {
    let error = caught
    // The owned data layer's tenant rule (a key without a tenant, or naming another's).
    if (error instanceof TenantForbidden) error = new AppError('TENANT_FORBIDDEN', error.message)
    if (!(error instanceof AppError) && isOutage(error)) {
      // Postgres or Redis unreachable: the request was fine and will work again shortly.
      request.log.warn({ err: error }, 'request failed: a dependency is unreachable')
      error = unavailable('complete this request')
    }
    if (error instanceof AppError) {
      reply.headers(error.headers)
      return reply.code(error.statusCode).send(errorBody(error.errorCode, error.statusCode, error.message))
    }
    if (error.validation) {
      const message = describeValidationError(error.validationContext, error.validation[0] as ErrorObject)
      return reply.code(400).send(errorBody('VALIDATION_ERROR', 400, message))
    }
    const known = error.code ? fastifyCodes[error.code] : undefined
    const status = error.statusCode ?? 500
    if (known && status < 500) {
      return reply.code(status).send(errorBody(known.errorCode, status, known.message ?? error.message))
    }
    if (status >= 400 && status < 500) {
      return reply.code(status).send(errorBody('VALIDATION_ERROR', status, error.message))
    }
    request.log.error({ err: error }, 'request failed')
    return reply.code(500).send(errorBody('INTERNAL_ERROR', 500, 'Internal server error'))
  })
}

/**
 * Errors the router raises before any route or hook runs (Fastify's `frameworkErrors`), which would
 * otherwise answer with Fastify's own body. A path parameter over the router's length limit names
 * nothing that exists, like any other malformed id.
 */
export function renderFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const path = request.url.split('?')[0]
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return reply.code(400).send(errorBody('VALIDATION_ERROR', 400, 'The URL is malformed'))
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return reply
        .code(404)
        .send(errorBody('NOT_FOUND', 404, `Route ${request.method} ${path?.slice(0, 100)}… not found`))
    default:
      request.log.error({ err: error }, 'request failed in the router')
      return reply.code(500).send(errorBody('INTERNAL_ERROR', 500, 'Internal server error'))
  }
}
