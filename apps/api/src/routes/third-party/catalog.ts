import {
  ChannelList,
  ChannelListQuery,
  ProductList,
  ProductListQuery,
  ProjectList,
  ProjectListQuery,
  pageMeta,
  Scopes,
} from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { callerOf } from '../../http/caller.ts'
import { splitCommaLists } from '../../http/comma-lists.ts'
import { errorResponses } from '../../http/error-responses.ts'

const errors = errorResponses('VALIDATION_ERROR')

/** The catalog partners read: shared channels, and their tenant's projects and products. */
export const catalogRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps

  app.get(
    '/channels',
    {
      config: { scope: Scopes.readChannels },
      preValidation: splitCommaLists('channelIds'),
      schema: {
        operationId: 'listChannels',
        tags: ['catalog'],
        summary: 'List channels (a bare array)',
        querystring: ChannelListQuery,
        response: { 200: ChannelList, ...errors },
      },
    },
    async (request) => owned(db, callerOf(request)).catalog.channels(request.query),
  )

  app.get(
    '/projects',
    {
      config: { scope: Scopes.readProjects },
      preValidation: splitCommaLists('channelIds'),
      schema: {
        operationId: 'listProjects',
        tags: ['catalog'],
        summary: "List the tenant's projects (an array holding one envelope with `datas`)",
        querystring: ProjectListQuery,
        response: { 200: ProjectList, ...errors },
      },
    },
    async (request) => {
      const { query } = request
      const { items, itemCount } = await owned(db, callerOf(request)).catalog.projects(query)
      return [{ ...pageMeta(query.page, query.take, itemCount), datas: items }]
    },
  )

  app.get(
    '/products',
    {
      config: { scope: Scopes.readProducts },
      preValidation: splitCommaLists('productType'),
      schema: {
        operationId: 'listProducts',
        tags: ['catalog'],
        summary: "List the tenant's products (an array holding one envelope with `datas`)",
        querystring: ProductListQuery,
        response: { 200: ProductList, ...errors },
      },
    },
    async (request) => {
      const { query } = request
      const { items, itemCount } = await owned(db, callerOf(request)).catalog.products(query)
      return [{ ...pageMeta(query.page, query.take, itemCount), datas: items }]
    },
  )
}
