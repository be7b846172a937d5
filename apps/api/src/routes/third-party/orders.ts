import {
  CreateOrderBody,
  Order,
  OrderIdParams,
  OrderList,
  OrderListQuery,
  pageMeta,
  Scopes,
  SingleOrder,
} from '@dispatch/contracts'
import { OrderRejected, owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import Type from 'typebox'
import { AppError } from '../../errors.ts'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { readIdempotencyKey, requestFingerprint } from '../../idempotency-key.ts'

const readErrors = errorResponses('VALIDATION_ERROR', 'NOT_FOUND')

export const orderRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock, config } = app.deps

  app.get(
    '/orders',
    {
      config: { scope: Scopes.readOrders },
      schema: {
        operationId: 'listOrders',
        tags: ['orders'],
        summary: "List the tenant's orders (one envelope with `data`)",
        querystring: OrderListQuery,
        response: { 200: OrderList, ...readErrors },
      },
    },
    async (request) => {
      const { query } = request
      const mine = owned(db, callerOf(request))
      mine.tenant(query.tenantId) // refused before the dates are checked
      if (query.startDate && query.endDate && query.startDate > query.endDate) {
        throw new AppError('VALIDATION_ERROR', 'querystring.startDate must not be after querystring.endDate')
      }
      const { items, itemCount } = await mine.orders.list(query)
      return { ...pageMeta(query.page, query.take, itemCount), data: items }
    },
  )

  app.get(
    '/orders/:orderId',
    {
      config: { scope: Scopes.readOrders },
      schema: {
        operationId: 'getOrder',
        tags: ['orders'],
        summary: 'One order (an array holding it)',
        params: OrderIdParams,
        response: { 200: SingleOrder, ...readErrors },
      },
    },
    async (request) => {
      const { orderId } = request.params
      const order = await owned(db, callerOf(request)).orders.find(orderId)
      if (!order) throw new AppError('NOT_FOUND', `No order with id ${JSON.stringify(orderId)}`)
      return [order]
    },
  )

  app.post(
    '/orders',
    {
      config: { scope: Scopes.createOrders },
      schema: {
        operationId: 'createOrder',
        tags: ['orders'],
        summary: 'Register an order (with kit serials)',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String()) }),
        body: CreateOrderBody,
        response: {
          201: Order,
          ...readErrors,
          ...errorResponses('OUT_OF_STOCK', 'INVALID_REFERENCE'),
        },
      },
    },
    async (request, reply) => {
      const mine = owned(db, callerOf(request))
      mine.tenant() // refused before the Idempotency-Key is read
      const key = readIdempotencyKey(request.headers['idempotency-key'])
      const idempotency = key
        ? { key, requestHash: requestFingerprint('POST /orders', request.body) }
        : undefined
      let result: Awaited<ReturnType<typeof mine.orders.create>>
      try {
        result = await mine.orders.create({
          body: request.body,
          now: clock(),
          bmeEmail: config.BME_EMAIL,
          idempotency,
        })
      } catch (error) {
        if (error instanceof OrderRejected) throw new AppError(error.code, error.message)
        throw error
      }
      switch (result.outcome) {
        case 'created':
          request.log.info({ orderId: result.order.id, displayId: result.order.displayId }, 'order created')
          return reply.code(201).send(result.order)
        case 'replayed':
          return reply.code(201).header('idempotent-replayed', 'true').send(result.response)
        case 'key_reused':
          throw new AppError(
            'IDEMPOTENCY_KEY_REUSED',
            'This Idempotency-Key was used with a different request body in the last 24 hours',
          )
        case 'in_flight':
          throw new AppError(
            'IDEMPOTENCY_REQUEST_IN_PROGRESS',
            'A request with this Idempotency-Key is still being processed; retry shortly',
            { 'retry-after': '1' },
          )
      }
    },
  )
}
