import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEVELOPMENT_ADMIN_TOKEN } from '../src/env.ts'
import { ADMIN, createWorld, PRODUCTION_ENV, type TestWorld } from './helpers.ts'

/**
 * Production defaults, tried as an operator would: the real entry points started with the
 * repository's development secrets exit 1 naming each variable and echoing none; a production API
 * whose /metrics is on a listener of its own starts, and its public port has no /metrics.
 */

const apiDir = fileURLToPath(new URL('..', import.meta.url))
const workerDir = fileURLToPath(new URL('../../worker/', import.meta.url))
/** The committed development keys (packages/runtime: secrets.ts, recipient-hash.ts). */
const DEV_SECRETS_KEY = 'ZGlzcGF0Y2gtZGV2ZWxvcG1lbnQtb25seS1rZXkhISE='
const DEV_HASH_KEY = 'dispatch-development-only-erasure-hash-key'
const SECRETS_KEY = Buffer.alloc(32, 9).toString('base64')

let world: TestWorld
const children = new Set<ChildProcess>()
beforeAll(async () => {
  world = await createWorld()
})
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  await world?.close()
})

function start(cwd: string, script: string, env: Record<string, string>) {
  const child = spawn(process.execPath, [script], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DATABASE_URL: world.databaseUrl,
      REDIS_URL: world.redisUrl,
      QUEUE_PREFIX: world.queuePrefix,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr?.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
  return { child, exited, stdout: () => stdout, stderr: () => stderr }
}

describe('production refuses the development secrets', () => {
  it('the API exits 1 naming the admin token, both keys and the open /metrics, echoing none', async () => {
    const api = start(apiDir, 'src/server.ts', {
      APP_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: '0',
      ADMIN_TOKENS: `ana=${ADMIN.ana},dev-admin=${DEVELOPMENT_ADMIN_TOKEN}`,
      SECRETS_KEY: DEV_SECRETS_KEY,
      ERASURE_HASH_KEY: DEV_HASH_KEY,
    })
    expect(await api.exited).toBe(1)
    const said = api.stderr()
    expect(said).toMatch(/^\s*ADMIN_TOKENS: dev-admin has the development token/m)
    expect(said).toMatch(/^\s*SECRETS_KEY: is the development key/m)
    expect(said).toMatch(/^\s*ERASURE_HASH_KEY: is the development key/m)
    expect(said).toMatch(/^\s*METRICS_TOKEN: required in production/m)
    for (const secret of [DEVELOPMENT_ADMIN_TOKEN, ADMIN.ana, DEV_SECRETS_KEY, DEV_HASH_KEY]) {
      expect(said + api.stdout()).not.toContain(secret)
    }
    expect(api.stdout()).not.toContain('listening')
  })

  it('the API exits 1 without ERASURE_HASH_KEY (the development one would be used)', async () => {
    const api = start(apiDir, 'src/server.ts', {
      APP_ENV: 'production',
      PORT: '0',
      ADMIN_TOKENS: `ana=${ADMIN.ana}`,
      SECRETS_KEY,
      METRICS_TOKEN: PRODUCTION_ENV.METRICS_TOKEN,
    })
    expect(await api.exited).toBe(1)
    expect(api.stderr()).toMatch(/^\s*ERASURE_HASH_KEY: required in production/m)
  })

  it('a worker exits 1 naming both development keys, echoing neither', async () => {
    const worker = start(workerDir, 'src/main.ts', {
      APP_ENV: 'production',
      SECRETS_KEY: DEV_SECRETS_KEY,
      ERASURE_HASH_KEY: DEV_HASH_KEY,
    })
    expect(await worker.exited).toBe(1)
    expect(worker.stderr()).toMatch(/^\s*SECRETS_KEY: is the development key/m)
    expect(worker.stderr()).toMatch(/^\s*ERASURE_HASH_KEY: is the development key/m)
    expect(worker.stderr() + worker.stdout()).not.toContain(DEV_SECRETS_KEY)
    expect(worker.stderr() + worker.stdout()).not.toContain(DEV_HASH_KEY)
  })
})

describe('/metrics on a listener of its own (METRICS_PORT)', () => {
  it('lets production start without METRICS_TOKEN, and takes /metrics off the public port', async () => {
    const api = start(apiDir, 'src/server.ts', {
      APP_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: '0',
      METRICS_HOST: '127.0.0.1',
      METRICS_PORT: '0',
      ADMIN_TOKENS: `ana=${ADMIN.ana}`,
      SECRETS_KEY,
      ERASURE_HASH_KEY: PRODUCTION_ENV.ERASURE_HASH_KEY,
    })
    const address = (pattern: RegExp) => api.stdout().match(pattern)?.[1]
    await waitFor(
      () => {
        if (api.child.exitCode !== null) throw new Error(`exited ${api.child.exitCode}\n${api.stderr()}`)
        return address(/API listening on (http:\/\/[\d.]+:\d+)/) !== undefined
      },
      { timeoutMs: 20_000, what: 'the API listening' },
    )
    const publicUrl = address(/API listening on (http:\/\/[\d.]+:\d+)/) as string
    const metricsUrl = address(/metrics listening on (http:\/\/[\d.]+:\d+)/) as string
    expect(metricsUrl).toBeDefined()
    expect(metricsUrl).not.toBe(publicUrl)

    const onPublic = await fetch(`${publicUrl}/metrics`)
    expect(onPublic.status).toBe(404)
    expect(await onPublic.json()).toMatchObject({ errorCode: 'NOT_FOUND' })
    const scraped = await fetch(`${metricsUrl}/metrics`)
    expect(scraped.status).toBe(200)
    expect(await scraped.text()).toContain('process_cpu_user_seconds_total')
    expect((await fetch(`${publicUrl}/healthz`)).status).toBe(200)

    api.child.kill('SIGTERM')
    expect(await api.exited).toBe(0)
  })
})
