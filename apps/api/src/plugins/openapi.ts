import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, RouteOptions } from 'fastify'
import { describeOperations, describeRoute } from './openapi-describe.ts'

/**
 * A route schema that sets this accepts a POST with no body at all (its handler reads a missing
 * body as `{}`), so its request body is documented as optional.
 */
export const OPTIONAL_BODY = 'x-optional-body'

/**
 * A route schema that sets this to a schema takes a `multipart/form-data` body of that shape. Its
 * handler reads the parts as they stream in, so Fastify validates nothing: the schema only
 * documents the form.
 */
export const MULTIPART_BODY = 'x-multipart-body'

/**
 * A route schema that sets this to `{ mediaType: schema }` takes a body of one of those media types,
 * streamed to its handler unparsed (a campaign's audience): documented only, validated by the handler.
 */
export const STREAMED_BODY = 'x-streamed-body'

type Operation = Record<string, unknown> & { requestBody?: { required?: boolean; content?: object } }

/** Applies the markers above to the operations that carry them, and drops the markers. */
function applyBodyMarkers<T extends { paths?: object }>(document: T): T {
  for (const operations of Object.values(document.paths ?? {}) as Record<string, unknown>[]) {
    for (const operation of Object.values(operations) as Operation[]) {
      if (!operation || typeof operation !== 'object') continue
      if (OPTIONAL_BODY in operation) {
        if (operation.requestBody) operation.requestBody.required = false
        delete operation[OPTIONAL_BODY]
      }
      if (MULTIPART_BODY in operation) {
        const schema = JSON.parse(JSON.stringify(operation[MULTIPART_BODY]))
        operation.requestBody = { required: true, content: { 'multipart/form-data': { schema } } }
        delete operation[MULTIPART_BODY]
      }
      if (STREAMED_BODY in operation) {
        const content = JSON.parse(JSON.stringify(operation[STREAMED_BODY]))
        operation.requestBody = { required: true, content }
        delete operation[STREAMED_BODY]
      }
    }
  }
  return document
}

/**
 * A route honours `Idempotency-Key` when it claims keys through the idempotency plugin, or reads the
 * header itself and declares it (`createOrder`).
 */
function honoursIdempotencyKeyOf(app: FastifyInstance) {
  return (route: RouteOptions) => {
    const headers = (route.schema?.headers ?? {}) as { properties?: object }
    if ('idempotency-key' in (headers.properties ?? {})) return true
    const claim = (app as { idempotency?: { claim: unknown } }).idempotency?.claim
    return claim !== undefined && [route.preHandler].flat().includes(claim as never)
  }
}

type Security = Array<Record<string, string[]>>
/** Where a header credential works, its browser session does too (console/session-auth.ts). */
const SESSION_OF: Record<string, string> = { adminToken: 'consoleSession', apiKey: 'portalSession' }

/** Adds the session cookie as an alternative to each operation's header credential, with its scopes. */
function addSessionAlternatives<T extends { paths?: object }>(document: T): T {
  for (const operations of Object.values(document.paths ?? {}) as Record<string, unknown>[]) {
    for (const operation of Object.values(operations) as Array<{ security?: Security }>) {
      const security = operation?.security
      if (!Array.isArray(security)) continue
      for (const requirement of [...security]) {
        for (const [scheme, session] of Object.entries(SESSION_OF)) {
          // The session acts with its key's scopes: it needs the ones the key would.
          const scopes = requirement[scheme]
          if (scopes && !security.some((r) => session in r)) security.push({ [session]: [...scopes] })
        }
      }
    }
  }
  return document
}

/** The OpenAPI 3.1 document (`/docs/json`) and Swagger UI (`/docs`), from the routes' own schemas. */
export async function registerOpenApi(app: FastifyInstance) {
  const honoursIdempotencyKey = honoursIdempotencyKeyOf(app)
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Dispatch API', version: '0.1.0', description: 'Queue-backed message dispatch.' },
      servers: [{ url: 'http://127.0.0.1:3000', description: 'Development' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          adminToken: { type: 'http', scheme: 'bearer' },
          consoleSession: {
            type: 'apiKey',
            in: 'cookie',
            name: '__Host-dispatch_console',
            description:
              'The console session (`POST /api/admin/session`), `dispatch_console` on plain HTTP to loopback. ' +
              'A change also carries the session’s `x-csrf-token`.',
          },
          portalSession: {
            type: 'apiKey',
            in: 'cookie',
            name: '__Host-dispatch_portal',
            description:
              'The portal session (`POST /api/third-party/session`), `dispatch_portal` on plain HTTP to loopback. ' +
              'A change also carries the session’s `x-csrf-token`.',
          },
        },
      },
    },
    transform: ({ schema, url, route }) => ({
      schema: describeRoute(route as RouteOptions, schema as never, honoursIdempotencyKey) as never,
      url,
    }),
    transformObject: (documents) =>
      'openapiObject' in documents
        ? describeOperations(addSessionAlternatives(applyBodyMarkers(documents.openapiObject)))
        : documents.swaggerObject,
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
}
