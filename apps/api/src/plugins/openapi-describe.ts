import { ErrorBody, type ErrorCode, ErrorCodes } from '@dispatch/contracts'
import type { RouteOptions } from 'fastify'

/**
 * What every route answers whatever its own schema says, added to each operation of the OpenAPI
 * document from how the route is built (its security, method, parts and hooks), so a route added
 * later is described without anyone remembering to. Only the document changes: validation and
 * serialization keep the route's own schema.
 */

/** A hook carrying this names the query parameters it splits on commas (`status=failed,expired`). */
export const COMMA_LISTS = Symbol('comma-separated query parameters')
const COMMA_MARKER = 'x-comma-lists'

/** 1 to 255 printable ASCII characters, as `readIdempotencyKey` takes them. */
const IdempotencyKey = {
  type: 'string',
  pattern: '^[\\x21-\\x7e]{1,255}$',
  description:
    "Makes the request safe to retry: a repeat with the same key and body within the key's lifetime answers the first answer again (with `Idempotent-Replayed: true`) instead of doing the work twice; the same key with another body is 422, and one still in progress 409.",
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Methods whose body Fastify parses when one is sent, whether or not the route reads it. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

type Schema = Record<string, unknown>
type Implied = Record<number, { codes: ErrorCode[]; why: string }>

const errorResponse = ({ codes, why }: Implied[number]) => ({
  ...ErrorBody,
  description: `${why} (${[...new Set(codes)].join(', ')})`,
})

const hooksOf = (route: RouteOptions, name: 'onRequest' | 'preValidation' | 'preHandler') =>
  [route[name]].flat().filter((hook): hook is NonNullable<typeof hook> => Boolean(hook))

/** The error statuses a route gives through the plugins it runs, before its handler. */
function impliedErrors(route: RouteOptions, schema: Schema): Implied {
  const implied: Implied = {}
  const add = (status: number, why: string, ...codes: ErrorCode[]) => {
    const known = implied[status]
    implied[status] = known
      ? { codes: [...known.codes, ...codes], why: `${known.why}, or ${why.toLowerCase()}` }
      : { codes, why }
  }
  const schemes = ((schema.security ?? []) as Record<string, unknown>[]).flatMap((s) => Object.keys(s))
  const methods = [route.method].flat()
  const multipart = 'x-multipart-body' in schema
  const streamed = schema['x-streamed-body'] as Record<string, unknown> | undefined
  if (schema.params || schema.querystring || schema.headers)
    add(400, 'A malformed parameter', 'VALIDATION_ERROR')
  if (methods.some((method) => BODY_METHODS.has(method))) {
    add(400, schema.body ? 'A malformed or invalid body' : 'A malformed body', 'VALIDATION_ERROR')
    add(413, 'The body is over the size limit', 'PAYLOAD_TOO_LARGE')
    add(
      415,
      multipart
        ? 'The body is not multipart/form-data'
        : streamed
          ? `The body is not ${Object.keys(streamed).join(' or ')}`
          : 'The body is not JSON',
      'UNSUPPORTED_MEDIA_TYPE',
    )
  }
  // A path parameter over the router's length limit names nothing: 404 before any route runs.
  if (String(route.url).includes(':')) add(404, 'No such resource, or an id too long to be one', 'NOT_FOUND')
  if (schemes.includes('adminToken')) {
    add(401, 'No valid admin token', 'ADMIN_AUTH_REQUIRED')
    add(429, 'Too many failed authentications from this address', 'RATE_LIMITED')
  }
  if (schemes.includes('apiKey')) {
    add(401, 'No valid API key', 'API_KEY_MISSING', 'API_KEY_INVALID')
    add(403, 'The key is not approved, or lacks the scope', 'API_KEY_NOT_ACTIVE', 'INSUFFICIENT_SCOPE')
    add(429, 'Too many invalid API keys from this address', 'RATE_LIMITED')
  }
  // The console's session cookies stand in for both credentials (console/session-auth.ts), and a
  // change made with one needs its CSRF token.
  const sessions = schemes.some((scheme) =>
    ['adminToken', 'apiKey', 'consoleSession', 'portalSession'].includes(scheme),
  )
  if (sessions && methods.some((method) => !SAFE_METHODS.has(method))) {
    add(403, 'A change made with a session cookie lacks its CSRF token', 'CSRF_TOKEN_INVALID')
  }
  add(503, 'The service is shutting down, or a dependency is unreachable', 'SERVICE_UNAVAILABLE')
  for (const { codes } of Object.values(implied)) {
    for (const code of codes) if (!(code in ErrorCodes)) throw new Error(`unknown error code ${code}`)
  }
  return implied
}

/** A copy of a schema in which no object requires a property that has a default (the server fills it in). */
function optionalDefaults(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(optionalDefaults)
  if (!schema || typeof schema !== 'object') return schema
  const copy: Schema = {}
  for (const [key, value] of Object.entries(schema)) copy[key] = optionalDefaults(value)
  const { required, properties } = schema as { required?: unknown; properties?: Record<string, Schema> }
  if (Array.isArray(required) && properties) {
    const left = required.filter((name) => !(properties[name] && 'default' in properties[name]))
    if (left.length > 0) copy.required = left
    else delete copy.required
  }
  return copy
}

/**
 * The route's schema as the document shows it: defaulted parameters and body fields optional, the
 * `Idempotency-Key` header where the route honours it, the responses its plugins give, and which
 * query parameters are comma-separated lists.
 */
export function describeRoute(
  route: RouteOptions,
  schema: Schema | undefined,
  honoursIdempotencyKey: (route: RouteOptions) => boolean,
): Schema | undefined {
  if (!schema || schema.hide) return schema
  const described: Schema = { ...schema }
  if (schema.querystring) described.querystring = optionalDefaults(schema.querystring)
  if (schema.body) described.body = optionalDefaults(schema.body)
  if (honoursIdempotencyKey(route)) {
    const headers = (schema.headers ?? { type: 'object', properties: {} }) as Schema
    described.headers = {
      ...headers,
      properties: { ...(headers.properties as Schema), 'idempotency-key': IdempotencyKey },
    }
  }
  const response: Schema = {}
  for (const [status, implied] of Object.entries(impliedErrors(route, schema))) {
    response[status] = errorResponse(implied)
  }
  described.response = { ...response, ...(schema.response as Schema) }
  const commaLists = hooksOf(route, 'preValidation').flatMap(
    (hook) => (hook as { [COMMA_LISTS]?: string[] })[COMMA_LISTS] ?? [],
  )
  if (commaLists.length > 0) described[COMMA_MARKER] = commaLists
  return described
}

type Operation = {
  parameters?: { in: string; name: string; style?: string; explode?: boolean }[]
  responses?: Record<
    string,
    { headers?: Record<string, unknown>; content?: Record<string, { schema?: Schema }> }
  >
  security?: Record<string, unknown>[]
  [COMMA_MARKER]?: string[]
}

const header = (name: string) => ({ $ref: `#/components/headers/${name}` })

/** The error body as the document renders it, but for its description: written once, referenced. */
const { description: _, ...errorBodyShape } = JSON.parse(JSON.stringify(ErrorBody)) as Schema
const ERROR_BODY_SHAPE = JSON.stringify(errorBodyShape)
const isErrorBody = (schema: Schema | undefined) => {
  if (!schema) return false
  const { description: _, ...shape } = schema
  return JSON.stringify(shape) === ERROR_BODY_SHAPE
}

/** Headers the answers carry, named once in `components.headers` and referenced from each response. */
export const RESPONSE_HEADERS = {
  RequestId: {
    required: true,
    description:
      "The request's id: the caller's `x-request-id` when it is 1 to 128 of `A-Za-z0-9._:-`, else a new UUID. It names the request in the service's logs.",
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
  },
  RetryAfter: {
    required: true,
    description: 'Seconds to wait before trying again.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  RetryAfterWhenGiven: {
    required: false,
    description: 'Seconds to wait before trying again, when the service can tell.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  WwwAuthenticate: {
    required: true,
    description: 'The scheme to authenticate with: `Bearer`.',
    schema: { type: 'string' },
  },
  IdempotentReplayed: {
    required: false,
    description:
      '`true` when this is the stored answer to an earlier request with the same `Idempotency-Key`.',
    schema: { type: 'string', enum: ['true'] },
  },
}

/**
 * The document-wide part: response headers on every response, the caller's `x-request-id`,
 * `style: form, explode: false` on the query parameters a route splits on commas, and the error
 * body written once (`components.schemas.ErrorBody`) rather than in each of several hundred answers.
 */
export function describeOperations<T extends { paths?: object; components?: object }>(document: T): T {
  document.components = {
    ...document.components,
    schemas: { ...(document.components as { schemas?: object })?.schemas, ErrorBody },
    headers: RESPONSE_HEADERS,
    parameters: {
      RequestId: {
        in: 'header',
        name: 'x-request-id',
        required: false,
        description:
          "An id of the caller's for this request, kept when it is 1 to 128 of `A-Za-z0-9._:-` (else replaced): it is echoed in the `x-request-id` answer header and the logs.",
        schema: { type: 'string' },
      },
    },
  }
  for (const operations of Object.values(document.paths ?? {}) as Record<string, Operation>[]) {
    for (const operation of Object.values(operations)) {
      if (!operation || typeof operation !== 'object' || !operation.responses) continue
      const commaLists = operation[COMMA_MARKER] ?? []
      delete operation[COMMA_MARKER]
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'query' && commaLists.includes(parameter.name)) {
          parameter.style = 'form'
          parameter.explode = false
        }
      }
      operation.parameters = [
        ...(operation.parameters ?? []),
        { $ref: '#/components/parameters/RequestId' } as never,
      ]
      const idempotent = operation.parameters.some((p) => p.in === 'header' && p.name === 'idempotency-key')
      const admin = (operation.security ?? []).some((s) => 'adminToken' in s)
      for (const [status, response] of Object.entries(operation.responses)) {
        const headers: Record<string, unknown> = { ...response.headers, 'x-request-id': header('RequestId') }
        if (status === '429') headers['retry-after'] = header('RetryAfter')
        if (status === '503') headers['retry-after'] = header('RetryAfterWhenGiven')
        if (status === '409' && idempotent) headers['retry-after'] = header('RetryAfterWhenGiven')
        if (status === '401' && admin) headers['www-authenticate'] = header('WwwAuthenticate')
        if (status.startsWith('2') && idempotent)
          headers['idempotent-replayed'] = header('IdempotentReplayed')
        response.headers = headers
        for (const media of Object.values(response.content ?? {})) {
          if (isErrorBody(media.schema)) media.schema = { $ref: '#/components/schemas/ErrorBody' }
        }
      }
    }
  }
  return document
}
