/**
 * The services of the webhook latency benchmark, each in a child process as they are deployed:
 * the API (`buildApp`, with the WhatsApp app secret) and a worker running the outbox and webhooks
 * roles. `startServices` forks this file once per role; run as a child it starts its role, says
 * `ready` (the API with its port) and closes on `stop` or when the parent goes away.
 */
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { createWorkerLogger, parseWorkerConfig, startWorker } from '@dispatch/worker'
import { forkChild } from '../harness/child.ts'

export const APP_SECRET = 'bench-whatsapp-app-secret'

type Role = 'api' | 'worker'

/** What a child needs: the benchmark's services, passed through the environment. */
const childEnv = () => ({
  DATABASE_URL: process.env.BENCH_DATABASE_URL ?? '',
  REDIS_URL: process.env.BENCH_REDIS_URL ?? '',
  QUEUE_PREFIX: process.env.BENCH_QUEUE_PREFIX ?? '',
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
})

async function startRole(role: Role): Promise<{ port?: number; close(): Promise<void> }> {
  if (role === 'api') {
    const config = parseApiConfig({ ...childEnv(), WHATSAPP_APP_SECRET: APP_SECRET })
    const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
    await app.listen({ host: '127.0.0.1', port: 0 })
    return { port: (app.server.address() as AddressInfo).port, close: () => app.close() }
  }
  // The service's defaults unless the environment sets them (WEBHOOK_*, OUTBOX_*), as for the service.
  const config = parseWorkerConfig({ ...process.env, ...childEnv(), WORKER_QUEUES: 'outbox,webhooks' })
  return startWorker(config, createWorkerLogger(config))
}

async function runChild(role: Role) {
  const running = await startRole(role)
  const stop = async () => {
    await running.close()
    process.exit(0)
  }
  process.on('message', (message) => {
    if (message === 'stop') void stop()
  })
  // The parent going away (finished or crashed) ends the child too.
  process.on('disconnect', () => void stop())
  process.send?.({ port: running.port })
}

/** Starts the API and the worker against the benchmark's database, Redis and queue prefix. */
export async function startServices(env: {
  databaseUrl: string
  redisUrl: string
  queuePrefix: string
  /** More environment for both, e.g. the worker's WEBHOOK_* settings. */
  extra: Record<string, string>
}) {
  const childEnv = {
    ...env.extra,
    BENCH_DATABASE_URL: env.databaseUrl,
    BENCH_REDIS_URL: env.redisUrl,
    BENCH_QUEUE_PREFIX: env.queuePrefix,
  }
  const script = fileURLToPath(import.meta.url)
  const start = (role: Role) =>
    forkChild<{ port?: number }>(script, { what: role, args: [role], env: childEnv, stopWith: 'message' })
  const started = await Promise.allSettled([start('api'), start('worker')])
  const children = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))
  const close = () => Promise.all(children.map((child) => child.stop())).then(() => {})
  const [api, worker] = started
  if (api?.status !== 'fulfilled' || worker?.status !== 'fulfilled') {
    await close()
    throw api?.status === 'rejected' ? api.reason : (worker as PromiseRejectedResult).reason
  }
  return { apiUrl: `http://127.0.0.1:${api.value.ready.port}`, close }
}

if (import.meta.main) {
  const role = process.argv[2]
  if (role !== 'api' && role !== 'worker') throw new Error(`unknown role ${role}`)
  await runChild(role)
}
