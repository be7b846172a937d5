import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, createWorld, type TestApp, type TestWorld } from './helpers.ts'

interface Operation {
  operationId?: string
  tags?: string[]
  security?: Record<string, string[]>[]
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
let operations: { name: string; operation: Operation }[]
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
      .map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation })),
  )
})
afterAll(async () => {
  await app.close()
  await world.close()
})

// No OpenAPI 3.1 validator is installed in the workspace; these are the properties the generated
// client relies on.
describe('the OpenAPI document', () => {
  it('is 3.1 and names the development server', () => {
    expect(document.openapi).toBe('3.1.0')
    expect(document.servers).toEqual([expect.objectContaining({ url: 'http://127.0.0.1:3000' })])
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
      'POST /api/api-keys/request',
      'POST /api/webhooks/whatsapp',
    ])
    const admin = operations.filter(({ name }) => name.includes('/api/admin/'))
    expect(admin.length).toBeGreaterThan(0)
    for (const { name, operation } of admin) expect(operation.security, name).toEqual([{ adminToken: [] }])
  })

  it('documents the message routes once, under /api, while the spec alias still answers', async () => {
    expect(Object.keys(document.paths).filter((path) => path.startsWith('/third-party/'))).toEqual([])
    expect(document.paths['/api/third-party/messages/send-text']?.post?.operationId).toBe('sendTextMessage')
    const alias = await app.inject({ method: 'POST', url: '/third-party/messages/send-text', payload: {} })
    expect(alias.json().errorCode).toBe('API_KEY_MISSING')
  })
})
