/**
 * What the accept benchmarks share: autocannon in a child process, the servers under test each in a
 * child process of their own (`server.ts`), so load generator and servers never share an event
 * loop and each server has a process to itself as in production, and an approved key.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { median } from '@dispatch/testing/bench'
import type { FastifyInstance } from 'fastify'

export interface Run {
  requestsPerSecond: number
  p99: number
  non2xx: number
  errors: number
}

export interface Load {
  url: string
  headers?: Record<string, string>
  body: string
  connections: number
  seconds: number
  /**
   * Each request's own numbers in place of `body`'s `NUMBER`s (`numberedBodies`, continuing this
   * process's count), e.g. a recipient per message: what a per-recipient frequency cap needs.
   */
  numbered?: boolean
}

/** Where a `numbered` body takes a number of its own, one per occurrence and request. */
export const NUMBER = '[<n>]'
/**
 * The next number `numberedBodies` hands out in this process: nine digits, so `+5531${n}` is a valid
 * phone. A numbered autocannon run continues it in its child and hands back where it stopped.
 */
export const numbering = { next: 100_000_000 }

/** `body` with every `NUMBER` replaced by the next number, never the same twice: a new body per call. */
export function numberedBodies(body: string): () => string {
  const parts = body.split(NUMBER)
  return () => {
    let out = parts[0] as string
    for (let i = 1; i < parts.length; i++) out += String(numbering.next++) + parts[i]
    return out
  }
}

/**
 * autocannon in a child process: POSTs `body` on `connections` connections for `seconds` (with
 * `numbered`, autocannon's API in `autocannon-numbered.ts`, a new body per request).
 */
export function autocannon(load: Load): Promise<Run> {
  const bin = createRequire(import.meta.url).resolve('autocannon/autocannon.js')
  const headers = { 'content-type': 'application/json', ...load.headers }
  let args: string[]
  if (load.numbered) {
    const options = { ...load, headers, from: numbering.next }
    args = [new URL('./autocannon-numbered.ts', import.meta.url).pathname, JSON.stringify(options)]
  } else {
    args = [bin, '-c', String(load.connections), '-d', String(load.seconds), '-m', 'POST', '--json']
    args.push('-b', load.body)
    for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`)
    args.push(load.url)
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (chunk) => {
      out += chunk
    })
    child.on('error', reject)
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}`))
      const result = JSON.parse(out)
      if (load.numbered) numbering.next = result.next
      resolve({
        requestsPerSecond: result.requests.average,
        p99: result.latency.p99,
        non2xx: result.non2xx,
        errors: result.errors,
      })
    })
  })
}

/** Refuses a run with failed answers: a figure that counts errors is no figure. */
export function assertClean(name: string, run: Run) {
  if (run.non2xx > 0 || run.errors > 0) {
    throw new Error(`${name}: ${run.non2xx} non-2xx answers and ${run.errors} errors during the run`)
  }
}

/**
 * Waits for the requests still in flight when autocannon stopped to end, before the queue is
 * emptied: an obliterate holds Redis for a moment, and would time out their enqueue.
 */
export const settle = () => new Promise((resolve) => setTimeout(resolve, 1000))

export const medianRun = (runs: Run[]): Run => ({
  requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
  p99: median(runs.map((r) => r.p99)),
  non2xx: 0,
  errors: 0,
})

/** The environment `server.ts` reads: the benchmark's database, Redis and queue prefix. */
export interface ServerEnv {
  DATABASE_URL: string
  REDIS_URL: string
  QUEUE_PREFIX: string
  /** `false` starts the API without metrics (bench/metrics.ts); unset, the default (on). */
  METRICS_ENABLED?: string
  /** A key's outstanding bound; the accept bench's one key stores more than the default per round. */
  MESSAGE_OUTSTANDING_MAX?: string
}

export interface ChildServer {
  /** `app`: the API's base URL; `baseline`: the bare server's. */
  url: string
  /** `app` only: an approved key with every send scope. */
  key: string
  /** The process's CPU time so far (user + system), in seconds; undefined off Linux. */
  cpuSeconds(): Promise<number | undefined>
  stop(): Promise<void>
}

/** A process's CPU time from /proc (USER_HZ is 100 on Linux), or undefined where there is none. */
export async function processCpuSeconds(pid: number | undefined): Promise<number | undefined> {
  try {
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? []
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return undefined
  }
}

/** Starts `server.ts` as `role` in a child process and waits until it listens. */
export function startServer(role: 'app' | 'baseline', env: ServerEnv): Promise<ChildServer> {
  const child: ChildProcess = fork(new URL('./server.ts', import.meta.url), [role], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`${role} server exited with ${code} before listening`)))
    child.once('message', (message) => {
      const { url, key } = message as { url: string; key: string }
      resolve({
        url,
        key,
        cpuSeconds: () => processCpuSeconds(child.pid),
        async stop() {
          if (child.exitCode === null) child.kill('SIGTERM')
          await exited
        },
      })
    })
  })
}

/** Requests a key with every send scope and approves it, through the API itself. */
export async function approvedKey(app: FastifyInstance): Promise<string> {
  const created = await app.inject({
    method: 'POST',
    url: '/api/api-keys/request',
    payload: {
      clientName: 'Bench',
      email: 'bench@dispatch.test',
      scopes: ['send:free-text', 'send:template', 'send:image'],
    },
  })
  const { id, key } = created.json()
  const approved = await app.inject({
    method: 'POST',
    url: `/api/admin/api-keys/${id}/approve`,
    headers: { authorization: `Bearer ${app.deps.config.adminTokens[0]?.token}` },
  })
  if (approved.statusCode !== 200) throw new Error(`approve failed: ${approved.body}`)
  return key
}

/**
 * This process's CPU per request, µs, over `count` sends of `body` by `inject`, 50 in flight (`body`
 * a function: a body of its own per send, e.g. `numberedBodies`).
 */
export async function cpuPerInjectedSend(
  { app, key }: { app: FastifyInstance; key: string },
  body: string | (() => string),
  count: number,
  path = 'send-text',
): Promise<number> {
  const before = process.cpuUsage()
  let next = 0
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next++ < count) {
        const res = await app.inject({
          method: 'POST',
          url: `/api/third-party/messages/${path}`,
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          payload: typeof body === 'string' ? body : body(),
        })
        if (res.statusCode !== 202) throw new Error(`send answered ${res.statusCode}: ${res.body}`)
      }
    }),
  )
  const used = process.cpuUsage(before)
  return (used.user + used.system) / count
}

type InjectTarget = { app: FastifyInstance; key: string }

/**
 * CPU per send of two apps in this process, `pairs` pairs of `count` sends each, the order
 * alternating so drift falls on both alike; one unmeasured batch of each first, and `between` run
 * after each pair (to clear what the sends stored).
 */
export async function pairedCpuPerSend(
  apps: { on: InjectTarget; off: InjectTarget },
  options: {
    body: string | (() => string)
    count: number
    pairs: number
    between: () => Promise<unknown>
    path?: string
  },
): Promise<{ on: number[]; off: number[] }> {
  await cpuPerInjectedSend(apps.on, options.body, options.count, options.path)
  await cpuPerInjectedSend(apps.off, options.body, options.count, options.path)
  const cpu = { on: [] as number[], off: [] as number[] }
  for (let pair = 0; pair < options.pairs; pair++) {
    for (const side of pair % 2 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      cpu[side].push(await cpuPerInjectedSend(apps[side], options.body, options.count, options.path))
    }
    await options.between()
  }
  return cpu
}
