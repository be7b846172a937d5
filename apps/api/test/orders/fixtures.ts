import type { Channel, Order, Product, Project } from '@dispatch/contracts'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { activeKey, asAdmin } from '../helpers.ts'

export const ORDER_SCOPES = [
  'read:channels',
  'read:projects',
  'read:products',
  'read:orders',
  'create:orders',
  'read:kits',
]

async function adminCreate<T>(app: FastifyInstance, table: string, payload: object): Promise<T> {
  const res = await app.inject({ method: 'POST', url: `/api/admin/${table}`, headers: asAdmin(), payload })
  if (res.statusCode !== 201) throw new Error(`creating ${table} failed: ${res.statusCode} ${res.body}`)
  return res.json<T>()
}

export const createChannel = (app: FastifyInstance, overrides: Record<string, unknown> = {}) =>
  adminCreate<Channel>(app, 'channels', { name: 'Research', timeline: 'RESEARCH', ...overrides })

export const createProject = (
  app: FastifyInstance,
  tenantId: string,
  channelId: string,
  overrides: Record<string, unknown> = {},
) => adminCreate<Project>(app, 'projects', { name: 'Gut study', tenantId, channelId, ...overrides })

export const createProduct = (
  app: FastifyInstance,
  tenantId: string,
  channelId: string,
  overrides: Record<string, unknown> = {},
) =>
  adminCreate<Product>(app, 'products', {
    name: 'Stool kit',
    stock: 100,
    price: 2500,
    tenantId,
    channelId,
    productType: 'KIT',
    ...overrides,
  })

/** A tenant with one channel, one project on it, a KIT and a PROBIOTIC product, and a key. */
export async function seedTenant(
  app: FastifyInstance,
  tenantId: string,
  options: { channel?: Record<string, unknown>; project?: Record<string, unknown> } = {},
) {
  const channel = await createChannel(app, { name: `Channel of ${tenantId}`, ...options.channel })
  const project = await createProject(app, tenantId, channel.id, {
    externalEmail: `partner@${tenantId}.test`,
    ...options.project,
  })
  const kit = await createProduct(app, tenantId, channel.id, { name: `Kit of ${tenantId}` })
  const probiotic = await createProduct(app, tenantId, channel.id, {
    name: `Probiotic of ${tenantId}`,
    productType: 'PROBIOTIC',
    price: 900,
  })
  const key = await activeKey(app, { tenantId, scopes: ORDER_SCOPES, email: `ops@${tenantId}.test` })
  return { tenantId, channel, project, kit, probiotic, key: key.key }
}
export type SeededTenant = Awaited<ReturnType<typeof seedTenant>>

let serialCounter = 0
/** Serials unique within the run (kit serials are unique across the whole system). */
export const serials = (n: number, prefix = 'SN') =>
  Array.from({ length: n }, () => `${prefix}-${process.pid}-${Date.now().toString(36)}-${++serialCounter}`)

export const orderBody = (t: SeededTenant, overrides: { order?: object; orderItems?: object[] } = {}) => ({
  order: { projectId: t.project.id, channelId: t.channel.id, ...overrides.order },
  orderItems: overrides.orderItems ?? [
    { productId: t.kit.id, price: 2500, quantity: 2, kitSerials: serials(2) },
  ],
})

export const postOrder = (
  app: FastifyInstance,
  key: string,
  payload: object,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> =>
  app.inject({
    method: 'POST',
    url: '/api/third-party/orders',
    headers: { 'x-api-key': key, ...headers },
    payload,
  })

export async function placeOrder(app: FastifyInstance, t: SeededTenant, overrides = {}): Promise<Order> {
  const res = await postOrder(app, t.key, orderBody(t, overrides))
  if (res.statusCode !== 201) throw new Error(`order failed: ${res.statusCode} ${res.body}`)
  return res.json<Order>()
}

export const get = (app: FastifyInstance, key: string, url: string) =>
  app.inject({ method: 'GET', url, headers: { 'x-api-key': key } })
