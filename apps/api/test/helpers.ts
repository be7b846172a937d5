import { execFile } from 'node:child_process'
import { STATUS_CODES } from 'node:http'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { type ApiKeyCreated, DEFAULT_SENDER_ID, ErrorBody, type MessageView } from '@dispatch/contracts'
import type { Sql } from '@dispatch/db'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import {
  captureLogs,
  childProcessEnv,
  createTestDatabase,
  signWebhook,
  testQueuePrefix,
  testRedisUrl,
  waitFor,
} from '@dispatch/testing'
import { createWorkerLogger, parseWorkerConfig, type RunningWorker, startWorker } from '@dispatch/worker'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { Redis } from 'ioredis'
import type { DestinationStream } from 'pino'
import Value from 'typebox/value'
import { expect } from 'vitest'
import { type ApiDeps, buildApp, createDeps, createLogger, parseApiConfig } from '../src/app.ts'
import { MessageStore } from '../src/sending/message-store.ts'
import { checkContract } from './contract.ts'

export const ADMIN = { ana: 'ana-token-0123456789abcdef', ops: 'ops-token-0123456789abcdef' }
export const asAdmin = (token = ADMIN.ana) => ({ authorization: `Bearer ${token}` })

/**
 * An admin's retry of a message a worker has just failed. The worker records the failure a moment
 * before it lets go of the job, and until then a retry answers 409 "retry in a moment" (as the docs
 * say); this asks again until the answer is another.
 */
export function retryWhenReleased(
  app: FastifyInstance,
  id: string,
  headers: Record<string, string> = asAdmin(),
): Promise<LightMyRequestResponse> {
  return waitFor(
    async () => {
      const res = await app.inject({ method: 'POST', url: `/api/admin/messages/${id}/retry`, headers })
      return res.statusCode === 409 && res.body.includes('retry in a moment') ? undefined : res
    },
    { what: `message ${id} let go by its worker` },
  )
}

/** One test file's world: its own database and queue prefix on the run's Postgres and Redis. */
/** A production app's own erasure-hash key and metrics token (test/production-config.test.ts). */
export const PRODUCTION_ENV = {
  ERASURE_HASH_KEY: 'test-production-erasure-hash-key-0123456789',
  METRICS_TOKEN: 'test-production-metrics-token-0123',
}

export interface TestWorld {
  databaseUrl: string
  redisUrl: string
  queuePrefix: string
  sql: Sql
  close(): Promise<void>
}

export async function createWorld(): Promise<TestWorld> {
  const database = await createTestDatabase()
  return {
    databaseUrl: database.url,
    redisUrl: testRedisUrl(),
    queuePrefix: testQueuePrefix(),
    sql: database.sql,
    close: database.drop,
  }
}

export interface TestApp extends FastifyInstance {
  logs: ReturnType<typeof captureLogs>
}

/**
 * The real app on the world's Postgres and Redis, its log lines captured for the test to read; each
 * request and answer is held to the OpenAPI document (test/contract.ts).
 */
export async function buildTestApp(
  world: TestWorld,
  env: Record<string, string> = {},
  /** Extra routes a test adds before the app is ready (to exercise a plugin from the outside). */
  extend?: (app: FastifyInstance) => void,
  /** Dependencies to replace, such as a clock set to another time (or a db counting its statements). */
  overrides: Partial<Pick<ApiDeps, 'clock' | 'tracing' | 'db'>> = {},
): Promise<TestApp> {
  const config = parseApiConfig({
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl,
    QUEUE_PREFIX: world.queuePrefix,
    ADMIN_TOKENS: `ana=${ADMIN.ana},ops=${ADMIN.ops}`,
    KEY_REQUEST_RATE_MAX: '10000',
    LOG_LEVEL: 'info',
    // What production refuses to start without, besides SECRETS_KEY (each test gives its own).
    ...(env.APP_ENV === 'production' ? PRODUCTION_ENV : {}),
    ...env,
  })
  const logs = captureLogs()
  const app = await buildApp({
    ...createDeps(config, { logger: createLogger(config, logs.stream) }),
    ...overrides,
  })
  extend?.(app)
  // Every request and answer of the tests is checked against the OpenAPI document.
  checkContract(app)
  await app.ready()
  return Object.assign(app, { logs })
}

/** The real worker, in process, on the world's Postgres, Redis and queue prefix; quick to poll and retry. */
export async function startTestWorker(
  world: TestWorld,
  env: Record<string, string> = {},
  logs?: DestinationStream,
): Promise<RunningWorker> {
  const config = parseWorkerConfig({
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl,
    QUEUE_PREFIX: world.queuePrefix,
    OUTBOX_POLL_MS: '100',
    EMAIL_BACKOFF_MS: '20',
    LOG_LEVEL: 'silent',
    ...env,
  })
  return startWorker(config, createWorkerLogger(config, logs))
}

export const keyRequest = (overrides: Record<string, unknown> = {}) => ({
  clientName: 'Acme Notifications',
  email: 'ops@acme.test',
  scopes: ['send:free-text', 'read:messages'],
  ...overrides,
})

export async function requestKey(app: FastifyInstance, overrides: Record<string, unknown> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/api-keys/request',
    payload: keyRequest(overrides),
  })
  if (res.statusCode !== 201) throw new Error(`key request failed: ${res.statusCode} ${res.body}`)
  return res.json<ApiKeyCreated>()
}

export async function decide(
  app: FastifyInstance,
  id: string,
  decision: 'approve' | 'reject' | 'revoke',
  payload?: object,
  token = ADMIN.ana,
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: `/api/admin/api-keys/${id}/${decision}`,
    headers: asAdmin(token),
    ...(payload ? { payload } : {}),
  })
}

/**
 * A key that works: requested, then approved by an admin. A `tenantId` in the overrides is
 * requested and then bound by the admin at approval (a request alone binds nothing); without one
 * the key is approved bound to no tenant.
 */
export async function activeKey(app: FastifyInstance, overrides: Record<string, unknown> = {}) {
  const created = await requestKey(app, overrides)
  const { tenantId } = overrides
  const res = await decide(app, created.id, 'approve', tenantId === undefined ? undefined : { tenantId })
  if (res.statusCode !== 200) throw new Error(`approve failed: ${res.statusCode} ${res.body}`)
  return created
}

/**
 * Binds a key to a sender pool as an admin does (`PATCH /api/admin/api-keys/:id`), then waits
 * until this API instance has the pool loaded, so the key's next send goes through it.
 */
export async function bindKeyToPool(app: FastifyInstance, keyId: string, poolId: string) {
  const bound = await app.inject({
    method: 'PATCH',
    url: `/api/admin/api-keys/${keyId}`,
    headers: asAdmin(),
    payload: { senderPoolId: poolId },
  })
  if (bound.statusCode !== 200) throw new Error(`binding failed: ${bound.statusCode} ${bound.body}`)
  await waitFor(() => app.sending.pools.get(poolId), { what: 'the pool loaded by the API' })
}

/**
 * Adds a webhook endpoint to a key (`POST /api/third-party/webhook-endpoints`, `manage:webhooks`)
 * and asserts it was created: the answer, for its `secret` and `id`.
 */
export async function addWebhookEndpoint(
  app: FastifyInstance,
  apiKey: string,
  endpoint: { url: string; events: readonly string[] },
) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/third-party/webhook-endpoints',
    headers: { 'x-api-key': apiKey },
    payload: endpoint,
  })
  expect(res.statusCode, res.body).toBe(201)
  return res
}

/** Asserts the spec's error body, exactly: its four fields, the status, the code, `error` the reason phrase. */
export function expectError(
  res: LightMyRequestResponse,
  statusCode: number,
  errorCode: string,
  message?: RegExp,
) {
  expect(res.statusCode, res.body).toBe(statusCode)
  const body = res.json()
  expect(Value.Check(ErrorBody, body), res.body).toBe(true)
  expect(body).toEqual({
    statusCode,
    errorCode,
    error: STATUS_CODES[statusCode],
    message: expect.any(String),
  })
  if (message) expect(body.message).toMatch(message)
  return body as { message: string }
}

/**
 * What the API stored for a sender (default: the default sender), as a test reads it: messages
 * waiting for admission, being admitted, and jobs in the sender's queue.
 */
export function storedMessages(world: TestWorld, senderId = DEFAULT_SENDER_ID) {
  const redis = new Redis(world.redisUrl)
  const store = new MessageStore(redis, { QUEUE_PREFIX: world.queuePrefix, REDIS_CLUSTER: false })
  const keys = fairKeys(world.queuePrefix, senderId)
  return {
    getJob: async (id: string) => (await store.find(senderId, id))?.job,
    /** Every message stored, whatever its state. */
    count: async () => {
      const [waiting, moving, counts] = await Promise.all([
        redis.hlen(keys.jobs),
        redis.hlen(keys.moving),
        store.queue(senderId).getJobCounts(),
      ])
      return waiting + moving + Object.values(counts).reduce((a, b) => a + b, 0)
    },
    close: async () => {
      await store.close()
      redis.disconnect()
    },
  }
}

export const SEND_SCOPES = ['send:free-text', 'send:template', 'send:image', 'read:messages']

/** A valid body for each send endpoint. */
export const validSends = {
  'send-text': { phone: '+5511987654321', text: 'Your code is 123456' },
  'send-template': {
    phone: '+5511987654321',
    templateId: 'order_shipped',
    language: 'pt_BR',
    variables: { '1': 'Ana', '2': 'BR-1042' },
    headerVariables: [{ type: 'image', value: null, originalMediaId: 'media-123' }],
    buttonVariables: [{ buttonIndex: 0, text: 'track/BR-1042', type: 'URL' }],
  },
  'send-image': { phone: '+5511987654321', image: { mediaId: 'media-456', text: 'Your invoice' } },
} as const
export type SendPath = keyof typeof validSends

export const send = (
  app: FastifyInstance,
  path: SendPath,
  key: string,
  payload: unknown = validSends[path],
  headers: Record<string, string> = {},
) =>
  app.inject({
    method: 'POST',
    url: `/api/third-party/messages/${path}`,
    headers: { 'x-api-key': key, ...headers },
    payload: payload as object,
  })

/** A message as its key reads it (`GET /api/third-party/messages/:id`); anything but 200 fails. */
export async function messageView(app: FastifyInstance, apiKey: string, id: string): Promise<MessageView> {
  const res = await app.inject({
    method: 'GET',
    url: `/api/third-party/messages/${id}`,
    headers: { 'x-api-key': apiKey },
  })
  expect(res.statusCode, res.body).toBe(200)
  return res.json<MessageView>()
}

/** Waits until the message reads one of `statuses`; answers that view. */
export function untilMessageStatus(
  app: FastifyInstance,
  apiKey: string,
  id: string,
  statuses: MessageView['status'] | MessageView['status'][],
  timeoutMs = 15_000,
): Promise<MessageView> {
  const wanted = new Set(Array.isArray(statuses) ? statuses : [statuses])
  return waitFor(
    async () => {
      const view = await messageView(app, apiKey, id)
      return wanted.has(view.status) ? view : undefined
    },
    { what: `message ${id} ${[...wanted].join(' or ')}`, timeoutMs, intervalMs: 100 },
  )
}

/** A message as the worker leaves it after sending: a row with the platform's id. Returns its id. */
export async function recordSentMessage(
  app: FastifyInstance,
  world: TestWorld,
  key: { id: string; key: string },
  platformMessageId: string,
): Promise<string> {
  const accepted = (await send(app, 'send-text', key.key)).json()
  await world.sql`
    insert into messages (id, api_key_id, type, phone, payload, status, attempts, platform_message_id, accepted_at, sent_at)
    values (${accepted.messageId}, ${key.id}, 'text', '+5511987654321', ${world.sql.json({ text: 'hi' })}, 'sent', 1,
            ${platformMessageId}, ${accepted.createdAt}, now())`
  return accepted.messageId as string
}

/** Signs the exact bytes under the app secret and posts them to the platform's webhook, as Meta does. */
export function postPlatformWebhook(app: FastifyInstance, body: object, appSecret: string) {
  const bytes = JSON.stringify(body)
  return app.inject({
    method: 'POST',
    url: '/api/webhooks/whatsapp',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signWebhook(bytes, appSecret) },
    payload: bytes,
  })
}

const repoDir = fileURLToPath(new URL('../../../', import.meta.url))

/**
 * `pnpm secrets:rotate`'s script on the world's database, in a process of its own with only the
 * environment given (and PATH, HOME); answers its exit code and output.
 */
export async function runSecretsRotate(world: TestWorld, env: Record<string, string>) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['packages/db/src/secrets-rotate-cli.ts'],
      { cwd: repoDir, env: { ...childProcessEnv(false), DATABASE_URL: world.databaseUrl, ...env } },
    )
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}
