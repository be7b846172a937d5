import { Channel, Product, Project } from '@dispatch/contracts'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { asAdmin, buildTestApp, createWorld, expectError, type TestApp, type TestWorld } from '../helpers.ts'
import { createChannel, createProduct, createProject } from '../orders/fixtures.ts'

let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

const admin = (method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, headers = asAdmin()) =>
  app.inject({ method, url: `/api/admin/${url}`, headers, ...(payload ? { payload } : {}) })

describe('admin catalog routes', () => {
  it('create channels, projects and products in the spec shapes, with defaults', async () => {
    const channel = await createChannel(app, { name: 'Research', sendBMEEmail: true })
    expect(Value.Check(Channel, channel)).toBe(true)
    expect(channel).toMatchObject({
      name: 'Research',
      sendBMEEmail: true,
      autoGenerateKit: false,
      timeline: 'RESEARCH',
    })
    expect(channel.defaultWorkflowValue).toEqual({
      sampleType: [],
      ffq: false,
      reibursement: false,
      report: [],
      collectionMedium: [],
    })
    const project = await createProject(app, 'acme', channel.id, {
      vendorPIC: 'Dr. V',
      inputMLPrefix: 'KIT_ID',
      externalOutputType: ['PDF', 'ASV'],
      isPartnerEmailD2D31Trigger: true,
    })
    expect(Value.Check(Project, project)).toBe(true)
    expect(project).toMatchObject({
      vendorPIC: 'Dr. V',
      inputMLPrefix: 'KIT_ID',
      isPartnerEmailD2D31Trigger: true,
      tenantId: 'acme',
    })
    expect(project.displayId).toMatch(/^PRJ-\d{8}$/)
    const product = await createProduct(app, 'acme', channel.id, { description: 'A kit' })
    expect(Value.Check(Product, product)).toBe(true)
    expect(product).toMatchObject({ active: true, stock: 100, description: 'A kit', productType: 'KIT' })
    expect(product.displayId).toMatch(/^PRD-\d{8}$/)
  })

  it('validate bodies: enums, unknown fields, references', async () => {
    expectError(
      await admin('POST', 'channels', { name: 'X', timeline: 'NOPE' }),
      400,
      'VALIDATION_ERROR',
      /timeline/,
    )
    expectError(
      await admin('POST', 'channels', { name: '', timeline: 'AMD' }),
      400,
      'VALIDATION_ERROR',
      /name/,
    )
    expectError(
      await admin('POST', 'channels', { name: 'X', timeline: 'AMD', extra: 1 }),
      400,
      'VALIDATION_ERROR',
      /extra/,
    )
    const channel = await createChannel(app)
    expectError(
      await admin('POST', 'channels', {
        name: 'X',
        timeline: 'AMD',
        defaultWorkflowValue: {
          sampleType: ['BLOOD'],
          ffq: false,
          reibursement: false,
          report: [],
          collectionMedium: [],
        },
      }),
      400,
      'VALIDATION_ERROR',
      /sampleType/,
    )
    expectError(
      await admin('POST', 'products', {
        name: 'P',
        stock: -1,
        price: 1,
        tenantId: 'acme',
        channelId: channel.id,
        productType: 'KIT',
      }),
      400,
      'VALIDATION_ERROR',
      /stock/,
    )
    expectError(
      await admin('POST', 'projects', {
        name: 'P',
        tenantId: 'acme',
        channelId: '00000000-0000-4000-8000-000000000000',
      }),
      422,
      'INVALID_REFERENCE',
      /channelId/,
    )
    expectError(
      await admin('POST', 'projects', {
        name: 'P',
        tenantId: 'acme',
        channelId: channel.id,
        externalEmail: 'nope',
      }),
      400,
      'VALIDATION_ERROR',
      /externalEmail/,
    )
  })

  it('update only the fields given; an empty update is 400; unknown ids 404', async () => {
    const channel = await createChannel(app, { name: 'Before' })
    const res = await admin('PATCH', `channels/${channel.id}`, { name: 'After', sendPartnerEmail: true })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ name: 'After', sendPartnerEmail: true, timeline: channel.timeline })
    expectError(await admin('PATCH', `channels/${channel.id}`, {}), 400, 'VALIDATION_ERROR')
    expectError(
      await admin('PATCH', 'channels/00000000-0000-4000-8000-000000000000', { name: 'x' }),
      404,
      'NOT_FOUND',
    )
    expectError(await admin('PATCH', 'channels/nope', { name: 'x' }), 404, 'NOT_FOUND')
    const product = await createProduct(app, 'acme', channel.id)
    const patched = await admin('PATCH', `products/${product.id}`, { stock: 7, active: false })
    expect(patched.json()).toMatchObject({ stock: 7, active: false, name: product.name })
    expectError(
      await admin('PATCH', `products/${product.id}`, { tenantId: 'other' }),
      400,
      'VALIDATION_ERROR',
      /tenantId/,
    )
    const project = await createProject(app, 'acme', channel.id)
    const moved = await admin('PATCH', `projects/${project.id}`, {
      vendorPIC: 'New PIC',
      collaborator: 'LAB',
    })
    expect(moved.json()).toMatchObject({ vendorPIC: 'New PIC', collaborator: 'LAB', name: project.name })
  })

  it('soft-delete: 204, then 404 for a second delete and for updates', async () => {
    const channel = await createChannel(app)
    const product = await createProduct(app, 'acme', channel.id)
    expect((await admin('DELETE', `products/${product.id}`)).statusCode).toBe(204)
    expectError(await admin('DELETE', `products/${product.id}`), 404, 'NOT_FOUND')
    expectError(await admin('PATCH', `products/${product.id}`, { stock: 1 }), 404, 'NOT_FOUND')
    const [row] = await world.sql`select deleted_at from products where id = ${product.id}`
    expect(row?.deleted_at).toBeInstanceOf(Date)
  })

  it('need an admin token', async () => {
    expectError(
      await admin('POST', 'channels', { name: 'X', timeline: 'AMD' }, {} as never),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
    expectError(
      await admin('DELETE', 'channels/x', undefined, { authorization: 'Bearer wrong-token-0123456789' }),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
  })
})
