/**
 * The service's own entry points as the scaling benchmark runs them: `apps/api/src/server.ts` and
 * `apps/worker/src/main.ts`, each started with `node` in a process of its own, as deployed; and the
 * CPU counters the benchmark reads to say what bounds a figure (from /proc: Linux only).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import type { Sql } from '@dispatch/db'
import { processCpuSeconds } from './load.ts'
import { freePort } from './redis-server.ts'

const API_ENTRY = fileURLToPath(new URL('../src/server.ts', import.meta.url))
const WORKER_ENTRY = fileURLToPath(new URL('../../worker/src/main.ts', import.meta.url))

export interface ServiceProcess {
  name: string
  /** The API's base URL; empty for a worker. */
  url: string
  /** CPU time so far (user + system), in seconds. */
  cpuSeconds(): Promise<number>
  /** SIGTERM, as an orchestrator stops it; SIGKILL if it has not exited 20 s later. */
  stop(): Promise<void>
}

/** Every process started here and not yet stopped, for `stopAllServices` (Ctrl-C, a failed run). */
const running = new Set<ServiceProcess>()

export const stopAllServices = () => Promise.all([...running].map((p) => p.stop()))

function wrap(name: string, child: ChildProcess, url: string): ServiceProcess {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const service: ServiceProcess = {
    name,
    url,
    cpuSeconds: async () => (await processCpuSeconds(child.pid)) ?? Number.NaN,
    async stop() {
      running.delete(service)
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      await exited
      clearTimeout(timer)
    },
  }
  running.add(service)
  return service
}

/** Rejects when `child` exits before `ready` settles, so a process that fails at boot says so. */
function bootOrFail<T>(name: string, child: ChildProcess, ready: Promise<T>, timeoutMs = 90_000) {
  return Promise.race([
    ready,
    new Promise<never>((_, reject) => {
      child.once('exit', (code, signal) =>
        reject(new Error(`${name} exited (${code ?? signal}) while starting`)),
      )
      setTimeout(() => reject(new Error(`${name} not ready after ${timeoutMs} ms`)), timeoutMs).unref()
    }),
  ])
}

/** `node apps/api/src/server.ts` on a free port; resolves once `/healthz` answers. */
export async function startApiProcess(name: string, env: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort()
  const child = spawn(process.execPath, [API_ENTRY], {
    env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  const url = `http://127.0.0.1:${port}`
  const service = wrap(name, child, url)
  const healthy = (async () => {
    for (;;) {
      const ok = await fetch(`${url}/healthz`).then(
        (res) => res.ok,
        () => false,
      )
      if (ok) return
      await sleep(100)
    }
  })()
  try {
    await bootOrFail(name, child, healthy)
  } catch (error) {
    await service.stop()
    throw error
  }
  return service
}

/**
 * `node apps/worker/src/main.ts`; resolves once it logs `messages worker started` (its lanes are
 * up and hold whatever switch is on). Its log lines of level warn and above go to stderr.
 */
export async function startWorkerProcess(name: string, env: Record<string, string>): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [WORKER_ENTRY], {
    env: { ...process.env, ...env, LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const service = wrap(name, child, '')
  const started = new Promise<void>((resolve) => {
    createInterface({ input: child.stdout as NonNullable<typeof child.stdout> }).on('line', (line) => {
      let entry: { level?: number; msg?: string }
      try {
        entry = JSON.parse(line)
      } catch {
        process.stderr.write(`[${name}] ${line}\n`)
        return
      }
      if (entry.msg === 'messages worker started') resolve()
      if ((entry.level ?? 0) >= 40) process.stderr.write(`[${name}] ${line}\n`)
    })
  })
  try {
    await bootOrFail(name, child, started)
  } catch (error) {
    await service.stop()
    throw error
  }
  return service
}

const statFields = async (path: string) =>
  (await readFile(path, 'utf8')).split(') ')[1]?.split(' ').map(Number) ?? []

/**
 * CPU seconds of this process's children that have exited and been waited for (cutime + cstime):
 * the autocannon processes of a round, read before and after it.
 */
export async function exitedChildrenCpuSeconds(): Promise<number> {
  const fields = await statFields('/proc/self/stat')
  return ((fields[13] ?? 0) + (fields[14] ?? 0)) / 100
}

/** Busy CPU seconds of the whole machine (every core, every process, ours or not), from /proc/stat. */
export async function machineBusySeconds(): Promise<number> {
  const [, ...fields] = ((await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '').trim().split(/\s+/)
  const ticks = fields.map(Number)
  // user, nice, system, (idle, iowait), irq, softirq, steal
  return [0, 1, 2, 5, 6, 7].reduce((sum, i) => sum + (ticks[i] ?? 0), 0) / 100
}

/**
 * CPU seconds so far of each Postgres backend serving `sql`'s database (the service's connections;
 * not the WAL writer or checkpointer, shared with every database), by pid; this connection left out.
 */
export async function databaseBackendsCpu(sql: Sql): Promise<Map<number, number>> {
  const rows = await sql<{ pid: number }[]>`
    select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
  const cpu = new Map<number, number>()
  for (const { pid } of rows) {
    const seconds = await processCpuSeconds(pid)
    if (seconds !== undefined) cpu.set(pid, seconds)
  }
  return cpu
}

/** CPU seconds between two `databaseBackendsCpu` readings; a backend opened meanwhile counts from 0. */
export const backendsCpuDelta = (before: Map<number, number>, after: Map<number, number>) =>
  [...after].reduce((sum, [pid, seconds]) => sum + seconds - (before.get(pid) ?? 0), 0)
