import { Validator } from '@seriousme/openapi-schema-validator'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, createWorld, type TestApp, type TestWorld } from './helpers.ts'

interface Parameter {
  in: string
  name: string
  required?: boolean
  style?: string
  explode?: boolean
  schema?: { type?: string; default?: unknown }
}
interface Operation {
  operationId?: string
  tags?: string[]
  security?: Record<string, string[]>[]
  parameters?: (Parameter | { $ref: string })[]
  requestBody?: { content: Record<string, { schema: { required?: string[] } }> }
  responses: Record<string, { description: string; content?: object; headers?: Record<string, unknown> }>
}
interface Document {
  openapi: string
  servers?: { url: string }[]
  paths: Record<string, Record<string, Operation>>
  components: { securitySchemes: Record<string, unknown> }
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

let world: TestWorld
let app: TestApp
let document: Document
let operations: { name: string; method: string; operation: Operation }[]
beforeAll(async () => {
  world = await createWorld()
  // With both webhook secrets set, every route the API can serve is in the document.
  app = await buildTestApp(world, {
    WHATSAPP_VERIFY_TOKEN: 'verify-token-for-the-document',
    WHATSAPP_APP_SECRET: 'app-secret-for-the-document',
  })
  document = (await app.inject({ method: 'GET', url: '/docs/json' })).json<Document>()
  operations = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, method, operation })),
  )
})
afterAll(async () => {
  await app.close()
  await world.close()
})

const parametersOf = (operation: Operation) =>
  (operation.parameters ?? []).filter((p): p is Parameter => 'name' in p)
const byId = (id: string) => {
  const found = operations.find(({ operation }) => operation.operationId === id)
  if (!found) throw new Error(`no operation ${id}`)
  return found.operation
}

// Whether the service keeps to the document is test/contract.ts's check, over every test's
// requests; here, the document itself.
describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 (by the OpenAPI Initiative schema) and names the development server', async () => {
    expect(document.openapi).toBe('3.1.0')
    const result = await new Validator().validate(document as never)
    expect(result.errors, JSON.stringify(result.errors, null, 2)?.slice(0, 4000)).toBeUndefined()
    expect(result.valid).toBe(true)
    expect(document.servers).toEqual([expect.objectContaining({ url: 'http://127.0.0.1:3000' })])
  })

  it("documents a success answer for every operation, never the generator's bare 200", () => {
    for (const { name, operation } of operations) {
      const success = Object.keys(operation.responses).filter((status) => status.startsWith('2'))
      expect(success.length, name).toBeGreaterThan(0)
      // A route with no response schema gets a bare `200: Default Response`, whatever it answers.
      for (const status of success) {
        const response = operation.responses[status]
        if (!response?.content)
          expect(response?.description, `${name} ${status}`).not.toBe('Default Response')
      }
    }
    for (const table of ['channels', 'projects', 'products']) {
      const responses = document.paths[`/api/admin/${table}/{id}`]?.delete?.responses ?? {}
      expect(Object.keys(responses).sort(), table).toEqual([
        '204',
        '400',
        '401',
        '403',
        '404',
        '413',
        '415',
        '429',
        '503',
      ])
      expect(responses['204']?.content, table).toBeUndefined()
    }
  })

  it('requires no parameter or body field that has a default', () => {
    const lists = operations.filter(({ operation }) => parametersOf(operation).some((p) => p.name === 'take'))
    expect(lists.length).toBeGreaterThanOrEqual(12)
    for (const { name, operation } of operations) {
      for (const parameter of parametersOf(operation)) {
        if (parameter.schema?.default !== undefined)
          expect(parameter.required, `${name} ${parameter.name}`).toBe(false)
      }
    }
    const retry = byId('retryMessages').requestBody?.content['application/json']?.schema
    expect(retry?.required ?? []).not.toContain('limit')
  })

  it('documents the answers the plugins give: 400/413/415 for bodies, 401/429 behind credentials, 503', () => {
    for (const { name, method, operation } of operations) {
      const statuses = Object.keys(operation.responses)
      expect(statuses, name).toContain('503')
      if (['post', 'put', 'patch', 'delete'].includes(method))
        expect(statuses, name).toEqual(expect.arrayContaining(['400', '413', '415']))
      // The credential-failure limits guard the admin token and API keys.
      const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement))
      if (schemes.includes('adminToken') || schemes.includes('apiKey'))
        expect(statuses, name).toEqual(expect.arrayContaining(['401', '429']))
      for (const [status, response] of Object.entries(operation.responses)) {
        expect(Object.keys(response.headers ?? {}), `${name} ${status}`).toContain('x-request-id')
        if (status === '429')
          expect(Object.keys(response.headers ?? {}), `${name} ${status}`).toContain('retry-after')
      }
      if (operation.security?.[0]?.adminToken)
        expect(Object.keys(operation.responses['401']?.headers ?? {})).toContain('www-authenticate')
    }
  })

  it('declares Idempotency-Key on every operation that honours it, and the replay header on its answers', () => {
    const honouring = operations
      .filter(({ operation }) =>
        parametersOf(operation).some((p) => p.in === 'header' && p.name === 'idempotency-key'),
      )
      .map(({ operation }) => operation.operationId)
    expect(honouring.sort()).toEqual(
      [
        'createOrder',
        'sendMessageBatch',
        ...operations
          .map(({ operation }) => operation.operationId)
          .filter((id) => /^send[A-Z][a-z]+Message$/.test(id ?? '')),
      ].sort(),
    )
    expect(Object.keys(byId('sendTextMessage').responses['202']?.headers ?? {})).toContain(
      'idempotent-replayed',
    )
  })

  it('describes comma-separated array filters as form lists, not exploded', () => {
    const status = parametersOf(byId('listMessages')).find((p) => p.name === 'status')
    expect(status).toMatchObject({ style: 'form', explode: false, schema: { type: 'array' } })
    for (const { name, operation } of operations) {
      for (const parameter of parametersOf(operation)) {
        if (parameter.in === 'query' && parameter.schema?.type === 'array') {
          expect(parameter, `${name} ${parameter.name}`).toMatchObject({ style: 'form', explode: false })
        }
      }
    }
  })

  it('gives every operation a unique camelCase operationId and tags', () => {
    const ids = operations.map(({ operation }) => operation.operationId)
    for (const { name, operation } of operations) {
      expect(operation.operationId, name).toMatch(/^[a-z][A-Za-z]+$/)
      expect(operation.tags?.length, name).toBeGreaterThan(0)
    }
    expect(new Set(ids).size).toBe(ids.length)
    expect(ids).toEqual(
      expect.arrayContaining([
        'requestApiKey',
        'getOwnApiKey',
        'listApiKeys',
        'getApiKey',
        'approveApiKey',
        'rejectApiKey',
        'revokeApiKey',
        'sendTextMessage',
        'sendTemplateMessage',
        'sendImageMessage',
        'getMessage',
        'listChannels',
        'createOrder',
        'receiveWhatsAppWebhook',
      ]),
    )
  })

  it('declares security on every operation: a known scheme, or explicitly none for public routes', () => {
    const schemes = Object.keys(document.components.securitySchemes)
    const publicRoutes: string[] = []
    for (const { name, operation } of operations) {
      expect(operation.security, name).toBeInstanceOf(Array)
      for (const requirement of operation.security ?? []) {
        for (const scheme of Object.keys(requirement)) expect(schemes, name).toContain(scheme)
      }
      if (operation.security?.length === 0) publicRoutes.push(name)
    }
    expect(publicRoutes.sort()).toEqual([
      'GET /api/webhooks/whatsapp',
      'GET /healthz',
      'GET /readyz',
      'POST /api/admin/session',
      'POST /api/api-keys/request',
      'POST /api/third-party/session',
      'POST /api/webhooks/whatsapp',
    ])
    // Every admin route takes the token or the console's session; the session routes, the session.
    const admin = operations.filter(({ name }) => name.includes('/api/admin/') && !name.endsWith('/session'))
    expect(admin.length).toBeGreaterThan(0)
    for (const { name, operation } of admin) {
      expect(operation.security, name).toEqual([{ adminToken: [] }, { consoleSession: [] }])
    }
  })

  it('documents the message routes once, under /api, while the spec alias still answers', async () => {
    expect(Object.keys(document.paths).filter((path) => path.startsWith('/third-party/'))).toEqual([])
    expect(document.paths['/api/third-party/messages/send-text']?.post?.operationId).toBe('sendTextMessage')
    const alias = await app.inject({ method: 'POST', url: '/third-party/messages/send-text', payload: {} })
    expect(alias.json().errorCode).toBe('API_KEY_MISSING')
  })
})
