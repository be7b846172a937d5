import { appendFileSync } from 'node:fs'
import { STATUS_CODES } from 'node:http'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { OpenAPIBackend } from 'openapi-backend'
import { afterAll, expect } from 'vitest'

/**
 * The contract check: every request a test makes through `buildTestApp` and every answer it gets
 * are validated against the app's own OpenAPI document (`/docs/json`) by openapi-backend, and each
 * test file fails at its end if any broke the document. See "The contract check" in docs/client.md.
 *
 * An answer must be documented for its operation (status, media type, body schema, headers). A
 * request that breaks the document may be refused (the negative tests send plenty), but if the
 * service accepts it, the document is too strict: that is a violation too.
 */

interface HeaderObject {
  required?: boolean
  schema?: object
}
interface ResponseObject {
  content?: Record<string, unknown>
  headers?: Record<string, HeaderObject>
}
interface Operation {
  operationId?: string
  parameters?: { in: string; name: string; explode?: boolean }[]
  requestBody?: { content?: Record<string, unknown> }
  responses?: Record<string, ResponseObject>
}

export interface Violation {
  /** The test that made the request. */
  test: string
  request: string
  status: number
  problems: string[]
}

const violations: Violation[] = []
/** Where to append each violation as it happens (a JSON line), to read them across a long run. */
const REPORT_FILE = process.env.CONTRACT_REPORT

function record(violation: Violation) {
  violations.push(violation)
  if (REPORT_FILE) appendFileSync(REPORT_FILE, `${JSON.stringify(violation)}\n`)
}
/** One validator per distinct document in this test file's process: compiling is the costly part. */
const backends = new Map<string, OpenAPIBackend>()

function backendFor(document: object): OpenAPIBackend {
  const key = JSON.stringify(document)
  let backend = backends.get(key)
  if (!backend) {
    backend = new OpenAPIBackend({
      definition: JSON.parse(key),
      // The document's own validity is openapi.test.ts's job (a 3.1 schema validator); quick mode
      // skips openapi-backend's older one and dereferences synchronously.
      quick: true,
      // OpenAPI 3.1 schemas are JSON Schema 2020-12.
      customizeAjv: (_ajv, options) => {
        const ajv = new Ajv2020({ ...options, strict: false, allErrors: true })
        addFormats.default(ajv)
        ajv.addFormat('binary', true)
        return ajv as never
      },
    })
    backend.init()
    backends.set(key, backend)
  }
  return backend
}

const describe = (errors: { instancePath?: string; message?: string; params?: unknown }[] | null) =>
  (errors ?? []).map(
    (error) =>
      `${error.instancePath || '(root)'} ${error.message ?? 'is invalid'}${
        error.params && Object.keys(error.params).length ? ` ${JSON.stringify(error.params)}` : ''
      }`,
  )

/** Whether a media type is one of the documented ones, ranges such as `image/*` included. */
const documentedMedia = (media: string, documented: string[]) =>
  documented.some((range) => {
    const [type, subtype] = range.toLowerCase().split('/')
    const [givenType, givenSubtype] = media.split('/')
    return (type === '*' || type === givenType) && (subtype === '*' || subtype === givenSubtype)
  })

const mediaType = (value: unknown) =>
  String(value ?? '')
    .split(';')[0]
    ?.trim()
    .toLowerCase()

/** `/api/admin/channels/:id` → `/api/admin/channels/{id}`. */
const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')

/** The spec's alias mount of the message routes is left out of the document: it answers as `/api`'s. */
const ALIAS = '/third-party/messages'

/** A body the check could not copy, so does not compare. */
const UNREADABLE = Symbol('unreadable body')

interface Exchange {
  body?: unknown
  payload?: string | null
}
const exchanges = new WeakMap<FastifyRequest, Exchange>()

function currentTest() {
  try {
    return expect.getState().currentTestName ?? '(outside a test)'
  } catch {
    return '(outside a test)'
  }
}

function findOperation(
  document: { paths?: Record<string, Record<string, Operation>> },
  request: FastifyRequest,
) {
  const url = request.routeOptions.url
  if (!url || request.method === 'HEAD' || request.method === 'OPTIONS') return undefined
  let path = openApiPath(url)
  let rawPath = request.url
  if (path.startsWith(ALIAS)) {
    path = `/api${path}`
    rawPath = `/api${rawPath}`
  }
  const operation = document.paths?.[path]?.[request.method.toLowerCase()]
  if (!operation?.operationId) return undefined
  return { operation, rawPath }
}

/**
 * A comma-list parameter (`style: form, explode: false`) given more than once, as the service
 * also takes it (`status=failed,expired&status=sent`), is checked as the one list it amounts to:
 * OpenAPI has no way to say that both forms are taken.
 */
function joinRepeatedLists(operation: Operation, rawPath: string) {
  const [path, query] = rawPath.split('?', 2) as [string, string | undefined]
  if (!query) return rawPath
  const params = new URLSearchParams(query)
  let joined = false
  for (const parameter of operation.parameters ?? []) {
    if (parameter.in !== 'query' || parameter.explode !== false) continue
    const values = params.getAll(parameter.name)
    if (values.length < 2) continue
    params.set(parameter.name, values.join(','))
    joined = true
  }
  return joined ? `${path}?${params.toString()}` : rawPath
}

function requestProblems(
  backend: OpenAPIBackend,
  operation: Operation,
  request: FastifyRequest,
  rawPath: string,
  exchange: Exchange,
): string[] {
  const problems: string[] = []
  const contentType = mediaType(request.headers['content-type'])
  const documented = Object.keys(operation.requestBody?.content ?? {})
  const hasBody = Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding']
  if (hasBody && documented.length > 0 && contentType && !documentedMedia(contentType, documented)) {
    problems.push(`request content-type ${contentType} is not one of ${documented.join(', ')}`)
  }
  // A multipart form's parts stream to the handler: only a JSON or URL-encoded body is there to compare.
  const jsonBody =
    documented.includes('application/json') ||
    documented.includes('application/x-www-form-urlencoded') ||
    documented.length === 0
  const result = backend.validator.validateRequest(
    {
      method: request.method,
      path: joinRepeatedLists(operation, rawPath),
      headers: request.headers as Record<string, string>,
      body: jsonBody ? exchange.body : {},
    },
    operation.operationId as string,
  )
  // A route that takes no query parameter ignores any given, as HTTP services do (a cache buster,
  // a key pasted in the wrong place): the document has no way to say so.
  const takesQuery = (operation.parameters ?? []).some((p) => p.in === 'query')
  const errors = (result.errors ?? []).filter(
    (error) => takesQuery || !(error.instancePath === '/query' && error.keyword === 'additionalProperties'),
  )
  if (errors.length > 0) problems.push(...describe(errors as never).map((p) => `request ${p}`))
  return problems
}

function responseProblems(
  backend: OpenAPIBackend,
  operation: Operation,
  reply: FastifyReply,
  exchange: Exchange,
): string[] {
  const status = reply.statusCode
  const responses = operation.responses ?? {}
  const documented =
    responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default ?? undefined
  if (!documented) {
    return [`status ${status} is not documented (documented: ${Object.keys(responses).join(', ')})`]
  }
  const problems: string[] = []
  const headers = reply.getHeaders()
  // Fastify sends no body with a 204 or 304, whatever the handler gave.
  const payload = status === 204 || status === 304 ? '' : exchange.payload
  const media = mediaType(headers['content-type'])
  const content = Object.keys(documented.content ?? {})
  if (payload === undefined) {
    // A stream: its bytes are not compared, only its media type.
  } else if (!payload) {
    if (content.length > 0) problems.push(`answer has no body; the document gives ${content.join(', ')}`)
  } else if (content.length === 0) {
    problems.push(`answer has a body (${media}); the document gives none`)
  }
  if (payload !== '' && payload !== null && content.length > 0 && media && !documentedMedia(media, content)) {
    problems.push(`answer content-type ${media} is not one of ${content.join(', ')}`)
  }
  if (payload && media === 'application/json' && content.includes(media)) {
    let body: unknown
    try {
      body = JSON.parse(payload)
    } catch {
      problems.push('answer body is not JSON')
    }
    if (body !== undefined) {
      const result = backend.validator.validateResponse(body, operation.operationId as string, status)
      if (!result.valid) problems.push(...describe(result.errors as never).map((p) => `answer body ${p}`))
    }
  }
  const headerResult = backend.validator.validateResponseHeaders(headers, operation.operationId as string, {
    statusCode: status,
  })
  if (!headerResult.valid)
    problems.push(...describe(headerResult.errors as never).map((p) => `answer header ${p}`))
  for (const [name, header] of Object.entries(documented.headers ?? {})) {
    if (header.required && headers[name.toLowerCase()] === undefined) {
      problems.push(`answer lacks the required header ${name}`)
    }
  }
  return problems
}

/**
 * Adds the check to a test app: hooks that keep what the client sent and what it got, and compare
 * both with the document once the answer is out. Call before `app.ready()`.
 */
export function checkContract(app: FastifyInstance) {
  let cached: { backend: OpenAPIBackend; document: Parameters<typeof findOperation>[0] } | undefined
  const contract = () => {
    if (!cached) {
      const document = app.swagger() as Parameters<typeof findOperation>[0]
      cached = { document, backend: backendFor(document) }
    }
    return cached
  }
  // Before validation applies defaults to it: the body as the client sent it. A body too deep to
  // copy (a hostile-input test's) is left out of the comparison; the check never changes an answer.
  app.addHook('preValidation', async (request) => {
    try {
      exchanges.set(request, { body: structuredClone(request.body) })
    } catch {
      exchanges.set(request, { body: UNREADABLE })
    }
  })
  app.addHook('onSend', async (request, _reply, payload) => {
    const exchange = exchanges.get(request) ?? {}
    exchange.payload =
      typeof payload === 'string'
        ? payload
        : Buffer.isBuffer(payload)
          ? payload.toString('utf8')
          : payload === null || payload === undefined
            ? ''
            : undefined
    exchanges.set(request, exchange)
    return payload
  })
  app.addHook('onResponse', async (request, reply) => {
    const test = currentTest()
    try {
      const { document, backend } = contract()
      const found = findOperation(document, request)
      if (!found) return
      const exchange = exchanges.get(request) ?? {}
      const problems = responseProblems(backend, found.operation, reply, exchange)
      const refused = reply.statusCode >= 400
      const invalid =
        exchange.body === UNREADABLE
          ? []
          : requestProblems(backend, found.operation, request, found.rawPath, exchange)
      if (!refused && invalid.length > 0) {
        problems.push(
          `the service accepted (${reply.statusCode}) a request the document forbids:`,
          ...invalid.map((p) => `  ${p}`),
        )
      }
      if (problems.length > 0) {
        record({
          test,
          request: `${request.method} ${request.url.slice(0, 200)} (${found.operation.operationId})`,
          status: reply.statusCode,
          problems,
        })
      }
    } catch (error) {
      record({
        test,
        request: `${request.method} ${request.url.slice(0, 200)}`,
        status: reply.statusCode,
        problems: [`the contract check failed: ${(error as Error).stack ?? error}`],
      })
    }
  })
}

/** The violations recorded so far in this file (and forgets them), for a test of the check itself. */
export function takeViolations(): Violation[] {
  return violations.splice(0)
}

export function formatViolations(found: Violation[]): string {
  return found
    .map(
      (v) =>
        `${v.request} → ${v.status} ${STATUS_CODES[v.status] ?? ''}\n  in: ${v.test}\n${v.problems
          .map((p) => `  - ${p}`)
          .join('\n')}`,
    )
    .join('\n')
}

// Registered while the test file is collected (helpers.ts imports this module), so it runs after
// the file's own afterAll hooks, once its apps are closed.
if (process.env.VITEST) {
  afterAll(() => {
    const found = takeViolations()
    if (found.length > 0) {
      const error = new Error(
        `The API broke its OpenAPI document ${found.length} time(s) in this file (see "The contract check" in docs/client.md):\n${formatViolations(found)}`,
      )
      // Where the check threw says nothing: the list above names each request and its test.
      error.stack = error.message
      throw error
    }
  })
}
