import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

/**
 * A route schema that sets this accepts a POST with no body at all (its handler reads a missing
 * body as `{}`), so its request body is documented as optional.
 */
export const OPTIONAL_BODY = 'x-optional-body'

type Operation = Record<string, unknown> & { requestBody?: { required?: boolean } }

/** Marks the request body optional on the operations that say so, and drops the marker. */
function markOptionalBodies<T extends { paths?: object }>(document: T): T {
  for (const operations of Object.values(document.paths ?? {}) as Record<string, unknown>[]) {
    for (const operation of Object.values(operations) as Operation[]) {
      if (!operation || typeof operation !== 'object' || !(OPTIONAL_BODY in operation)) continue
      if (operation.requestBody) operation.requestBody.required = false
      delete operation[OPTIONAL_BODY]
    }
  }
  return document
}

/** The OpenAPI 3.1 document (`/docs/json`) and Swagger UI (`/docs`), from the routes' own schemas. */
export async function registerOpenApi(app: FastifyInstance) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Dispatch API', version: '0.1.0', description: 'Queue-backed message dispatch.' },
      servers: [{ url: 'http://127.0.0.1:3000', description: 'Development' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          adminToken: { type: 'http', scheme: 'bearer' },
        },
      },
    },
    transformObject: (documents) =>
      'openapiObject' in documents ? markOptionalBodies(documents.openapiObject) : documents.swaggerObject,
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
}
