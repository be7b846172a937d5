import { startTracing, type Tracing } from '@dispatch/runtime/tracing'
import { type FakeWhatsApp, graphError, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import { createWorkerLogger, parseWorkerConfig, type RunningWorker, startWorker } from '@dispatch/worker'
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  retryWhenReleased,
  SEND_SCOPES,
  send,
  type TestApp,
  type TestWorld,
} from './helpers.ts'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let tracing: Tracing
const exporter = new InMemorySpanExporter()

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  tracing = startTracing({ serviceName: 'dispatch-test', exporter }) as Tracing
  app = await buildTestApp(world, {}, undefined, { tracing })
  const config = parseWorkerConfig({
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl,
    QUEUE_PREFIX: world.queuePrefix,
    WORKER_QUEUES: 'messages',
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-tracing-token',
    WHATSAPP_PHONE_NUMBER_ID: '100000000000321',
    ADMISSION_INTERVAL_MS: '20',
    LOG_LEVEL: 'silent',
  })
  worker = await startWorker(config, createWorkerLogger(config), { tracing })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await tracing?.shutdown()
  await world?.close()
})

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId

describe('tracing', () => {
  it('one trace runs from the send request through the job to the platform call', async () => {
    const key = await activeKey(app, { scopes: SEND_SCOPES })
    exporter.reset()
    const res = await send(app, 'send-text', key.key, { phone: '+5511987654321', text: 'traced' })
    expect(res.statusCode, res.body).toBe(202)
    const chain = await chainFromPlatformCall()
    const platform = chain[0] as ReadableSpan
    const names = chain.map((s) => s.name)
    expect(names[1]).toMatch(/^process messages/)
    const root = chain.at(-1) as ReadableSpan
    expect(root.attributes['http.request.method'] ?? root.attributes['http.method']).toBe('POST')
    expect(JSON.stringify(root.attributes)).toContain('send-text')
    expect(parentOf(root)).toBeUndefined()
    expect(platform.attributes['dispatch.sender_id']).toBe('default')
  })

  it("an admin's retry of a failed message: one trace from the retry request to the platform call", async () => {
    const key = await activeKey(app, { scopes: SEND_SCOPES })
    fake.script(graphError(131026, 'Message undeliverable'))
    const res = await send(app, 'send-text', key.key, { phone: '+5511987654321', text: 'retry me' })
    expect(res.statusCode, res.body).toBe(202)
    const id = res.json<{ messageId: string }>().messageId
    await waitFor(
      async () =>
        (await world.sql`select 1 from messages where id = ${id} and status = 'failed'`).length === 1,
      { what: 'the message to fail' },
    )
    exporter.reset()
    const retried = await retryWhenReleased(app, id)
    expect(retried.statusCode, retried.body).toBe(200)
    const chain = await chainFromPlatformCall()
    const root = chain.at(-1) as ReadableSpan
    expect(JSON.stringify(root.attributes)).toContain('/retry')
    expect(chain[1]?.name).toMatch(/^process messages/)
  })
})

/**
 * The spans from the platform call up to the request that queued it: the job's processing span,
 * then (through the job) the request; each is exported when it ends, the outer ones last.
 */
async function chainFromPlatformCall(): Promise<ReadableSpan[]> {
  const chainOf = (platform: ReadableSpan) => {
    const trace = platform.spanContext().traceId
    const byId = new Map(
      exporter
        .getFinishedSpans()
        .filter((s) => s.spanContext().traceId === trace)
        .map((s) => [s.spanContext().spanId, s]),
    )
    const chain: ReadableSpan[] = [platform]
    for (let span = platform; parentOf(span) && byId.has(parentOf(span) as string); ) {
      span = byId.get(parentOf(span) as string) as ReadableSpan
      chain.push(span)
    }
    return chain
  }
  return await waitFor(
    () => {
      const platform = exporter.getFinishedSpans().find((span) => span.name === 'whatsapp-cloud send')
      const chain = platform && chainOf(platform)
      return chain && parentOf(chain.at(-1) as ReadableSpan) === undefined && chain.length >= 3
        ? chain
        : undefined
    },
    { what: 'the chain from the platform call up to the request' },
  ).catch((error) => {
    const seen = exporter.getFinishedSpans().map((s) => ({
      name: s.name,
      trace: s.spanContext().traceId.slice(0, 6),
      id: s.spanContext().spanId.slice(0, 6),
      parent: parentOf(s)?.slice(0, 6),
    }))
    throw new Error(`${error.message}: ${JSON.stringify(seen)}`)
  })
}
