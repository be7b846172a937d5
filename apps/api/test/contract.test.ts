import type { FastifySchema } from 'fastify'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { takeViolations } from './contract.ts'
import { buildTestApp, createWorld, type TestApp, type TestWorld } from './helpers.ts'

// The contract check itself: it must see a lie when the service tells one.
let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, {}, (app) => {
    const schema: FastifySchema = {
      operationId: 'contractProbe',
      tags: ['test'],
      security: [],
      // Fastify lets other parameters through; the document names only these.
      querystring: { type: 'object', properties: { answer: { type: 'string' } } },
      response: {
        200: {
          type: 'object',
          properties: { ok: { type: 'boolean' } },
          required: ['ok'],
          additionalProperties: false,
        },
      },
    }
    app.get('/contract-probe', { schema }, async (request, reply) => {
      const { answer } = request.query as { answer?: string }
      if (answer === 'teapot') return reply.code(418).send({ short: 'stout' })
      if (answer === 'wrong') return reply.type('application/json').send(JSON.stringify({ ok: 'yes' }))
      return { ok: true }
    })
  })
})
afterAll(async () => {
  await app.close()
  await world.close()
})

it('records nothing for an answer the document describes', async () => {
  expect((await app.inject({ method: 'GET', url: '/contract-probe' })).statusCode).toBe(200)
  expect(takeViolations()).toEqual([])
})

it('records an undocumented status and a body that breaks its schema', async () => {
  await app.inject({ method: 'GET', url: '/contract-probe?answer=teapot' })
  await app.inject({ method: 'GET', url: '/contract-probe?answer=wrong' })
  const found = takeViolations()
  expect(found.map((v) => v.status)).toEqual([418, 200])
  expect(found[0]?.problems.join()).toMatch(/status 418 is not documented/)
  expect(found[1]?.problems.join()).toMatch(/answer body \/ok must be boolean/)
})

it('records a request the document forbids that the service accepted', async () => {
  // The document names no `other` parameter; the probe takes it all the same.
  await app.inject({ method: 'GET', url: '/contract-probe?answer=fine&other=1' })
  const [found] = takeViolations()
  expect(found?.problems.join('\n')).toMatch(/accepted \(200\) a request the document forbids/)
})
