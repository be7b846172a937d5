import {
  CatalogIdParams,
  Channel,
  CreateChannelBody,
  CreateProductBody,
  CreateProjectBody,
  Product,
  Project,
  UpdateChannelBody,
  UpdateProductBody,
  UpdateProjectBody,
} from '@dispatch/contracts'
import {
  type CatalogTable,
  createChannel,
  createProduct,
  createProject,
  InvalidReference,
  softDeleteCatalogRecord,
  updateChannel,
  updateProduct,
  updateProject,
} from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TSchema } from 'typebox'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'

const errors = errorResponses('NOT_FOUND', 'VALIDATION_ERROR', 'INVALID_REFERENCE')
const security = [{ adminToken: [] }]
const names = { channels: 'channel', projects: 'project', products: 'product' } as const
/** `createChannel`, `updateProject`, …: the OpenAPI operationIds the typed client is generated from. */
const operationId = (verb: string, table: CatalogTable) =>
  `${verb}${names[table][0]?.toUpperCase()}${names[table].slice(1)}`

/** A missing record, a soft-deleted one and a malformed id are all the same 404. */
const notFound = (table: CatalogTable, id: string) =>
  new AppError('NOT_FOUND', `No ${names[table]} with id ${JSON.stringify(id)}`)

const referenceChecked = async <T>(work: () => Promise<T>) => {
  try {
    return await work()
  } catch (error) {
    if (error instanceof InvalidReference) throw new AppError('INVALID_REFERENCE', error.message)
    throw error
  }
}

/** Admins manage the catalog: create (201), update (PATCH, partial) and soft delete (204). */
export const adminCatalogRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock } = app.deps

  const resource = (
    table: CatalogTable,
    schemas: { create: TSchema; update: TSchema; view: TSchema },
    create: (body: never) => Promise<unknown>,
    update: (id: string, body: never, now: Date) => Promise<unknown>,
  ) => {
    const tags = ['admin']
    app.post(
      `/${table}`,
      {
        schema: {
          operationId: operationId('create', table),
          tags,
          summary: `Create a ${names[table]}`,
          security,
          body: schemas.create,
          response: { 201: schemas.view, ...errors },
        },
      },
      async (request, reply) => {
        const created = await referenceChecked(() => create(request.body as never))
        request.log.info({ table, actor: request.adminName }, 'catalog record created')
        return reply.code(201).send(created as never)
      },
    )
    app.patch(
      `/${table}/:id`,
      {
        schema: {
          operationId: operationId('update', table),
          tags,
          summary: `Update a ${names[table]} (only the fields given)`,
          security,
          params: CatalogIdParams,
          body: schemas.update,
          response: { 200: schemas.view, ...errors },
        },
      },
      async (request) => {
        const { id } = request.params
        const updated = await referenceChecked(() => update(id, request.body as never, clock()))
        if (!updated) throw notFound(table, id)
        return updated as never
      },
    )
    app.delete(
      `/${table}/:id`,
      {
        schema: {
          operationId: operationId('delete', table),
          tags,
          summary: `Soft-delete a ${names[table]}`,
          security,
          params: CatalogIdParams,
          response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses('NOT_FOUND') },
        },
      },
      async (request, reply) => {
        const { id } = request.params
        if (!(await softDeleteCatalogRecord(db, table, id, clock()))) throw notFound(table, id)
        request.log.info({ table, id, actor: request.adminName }, 'catalog record deleted')
        return reply.code(204).send(null)
      },
    )
  }

  resource(
    'channels',
    { create: CreateChannelBody, update: UpdateChannelBody, view: Channel },
    (body: CreateChannelBody) => createChannel(db, body),
    (id, body: UpdateChannelBody, now) => updateChannel(db, id, body, now),
  )
  resource(
    'projects',
    { create: CreateProjectBody, update: UpdateProjectBody, view: Project },
    (body: CreateProjectBody) => createProject(db, body),
    (id, body: UpdateProjectBody, now) => updateProject(db, id, body, now),
  )
  resource(
    'products',
    { create: CreateProductBody, update: UpdateProductBody, view: Product },
    (body: CreateProductBody) => createProduct(db, body),
    (id, body: UpdateProductBody, now) => updateProduct(db, id, body, now),
  )
}
