import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { buildApp, createDeps, createLogger, parseApiConfig } from '../../src/app.ts'
import { ADMIN, createWorld, type TestWorld } from '../helpers.ts'

/** Routes a test slips into the real tree: under /api/third-party, or beside every prefix. */
const slip = vi.hoisted(() => ({
  thirdParty: undefined as ((app: FastifyInstance) => void) | undefined,
  undeclared: undefined as ((app: FastifyInstance) => void) | undefined,
}))

vi.mock('../../src/routes/third-party/kits.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/routes/third-party/kits.ts')>()
  return {
    kitRoutes: async (app: FastifyInstance) => {
      await original.kitRoutes(app as never, {})
      slip.thirdParty?.(app)
    },
  }
})

vi.mock('../../src/routes/health/index.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/routes/health/index.ts')>()
  return {
    // The probes in a plugin of their own, so a route added beside them is under no declaration.
    healthRoutes: async (app: FastifyInstance) => {
      await app.register(original.healthRoutes)
      slip.undeclared?.(app)
    },
  }
})

let world: TestWorld
beforeAll(async () => {
  world = await createWorld()
})
afterAll(async () => {
  await world.close()
})

/** Builds the app as the server does; the error its start fails with, or undefined. */
async function startError(): Promise<unknown> {
  const config = parseApiConfig({
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl,
    QUEUE_PREFIX: world.queuePrefix,
    ADMIN_TOKENS: `ana=${ADMIN.ana}`,
    LOG_LEVEL: 'silent',
  })
  const deps = createDeps(config, { logger: createLogger(config) })
  try {
    const app = await buildApp(deps)
    await app.ready()
    await app.close()
    return undefined
  } catch (error) {
    await deps.close()
    return error
  }
}

it('starts when every route under an API-key prefix declares its scope', async () => {
  expect(await startError()).toBeUndefined()
})

it('refuses to start with a route under /api/third-party that declares no scope, naming it', async () => {
  slip.thirdParty = (app) => app.get('/kits-unscoped', async () => ({}))
  try {
    const error = await startError()
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).toMatch(
      /^GET \/api\/third-party\/kits-unscoped is under an API-key prefix and declares no scope/,
    )
  } finally {
    slip.thirdParty = undefined
  }
})

it('starts with such a route once it declares a scope, or none explicitly', async () => {
  slip.thirdParty = (app) => {
    app.get('/kits-any-key', { config: { scope: 'none' } }, async () => ({}))
    app.get('/kits-read', { config: { scope: 'read:kits' } }, async () => ({}))
  }
  try {
    expect(await startError()).toBeUndefined()
  } finally {
    slip.thirdParty = undefined
  }
})

it('refuses to start with a route under no prefix that declares its authentication, naming it', async () => {
  slip.undeclared = (app) => app.get('/api/undeclared', async () => ({}))
  try {
    const error = await startError()
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).toMatch(
      /^GET \/api\/undeclared is under no prefix that declares its authentication/,
    )
  } finally {
    slip.undeclared = undefined
  }
})
