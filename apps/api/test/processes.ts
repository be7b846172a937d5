import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { parseExposition, type Sample, waitFor } from '@dispatch/testing'
import { Redis } from 'ioredis'

const repoDir = fileURLToPath(new URL('../../../', import.meta.url))

/** The real entry points, as ops run them: `node apps/api/src/server.ts`, `node apps/worker/src/main.ts`. */
export const ENTRY_POINTS = {
  api: 'apps/api/src/server.ts',
  worker: 'apps/worker/src/main.ts',
} as const

/** One log line of a service (pino's JSON). */
export type LogLine = { msg?: string; [field: string]: unknown }

export interface Service {
  name: string
  child: ChildProcess
  /** The JSON log lines it has written so far. */
  logs(): LogLine[]
  /** What it wrote to stderr (a crash's stack, a bad environment). */
  stderr(): string
  /** The first log line whose message contains `text`, once it is written. */
  logged(text: string, timeoutMs?: number): Promise<LogLine>
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  running(): boolean
}

/** Starts an entry point in a process of its own, with only PATH, HOME and `env`; JSON log lines kept. */
export function startService(name: string, entry: string, env: Record<string, string>): Service {
  const child = spawn(process.execPath, [entry], {
    cwd: repoDir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: LogLine[] = []
  let partial = ''
  let err = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    const text = partial + chunk.toString('utf8')
    const complete = text.split('\n')
    partial = complete.pop() ?? ''
    for (const line of complete) {
      if (line.trim() === '') continue
      try {
        lines.push(JSON.parse(line) as LogLine)
      } catch {
        lines.push({ msg: line })
      }
    }
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8')
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  const running = () => child.exitCode === null && child.signalCode === null
  return {
    name,
    child,
    logs: () => lines,
    stderr: () => err,
    running,
    exited,
    logged: (text, timeoutMs = 30_000) =>
      waitFor(
        () => {
          const line = lines.find((l) => typeof l.msg === 'string' && l.msg.includes(text))
          if (line) return line
          if (!running()) throw new Error(`${name} exited before logging "${text}"\n${err}`)
          return undefined
        },
        { timeoutMs, intervalMs: 50, what: `${name} to log "${text}"` },
      ),
  }
}

/** How a service fared, for a failing test's output: its state, its warnings and errors, its stderr. */
export function serviceReport(service: Service, lines = 10): string {
  const state = service.running() ? 'running' : `exited ${service.child.exitCode ?? service.child.signalCode}`
  const warnings = service
    .logs()
    .filter((line) => typeof line.level === 'number' && line.level >= 40)
    .slice(-lines)
    .map((line) => `  ${JSON.stringify(line)}`)
  const stderr = service.stderr().trim().split('\n').slice(-lines).join('\n  ')
  return [`${service.name} (${state})`, ...warnings, ...(stderr ? [`  stderr: ${stderr}`] : [])].join('\n')
}

/** One scrape of a `/metrics` endpoint, parsed. */
export async function scrape(url: string, token: string): Promise<Sample[]> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${await res.text()}`)
  return parseExposition(await res.text())
}

/** The sum of every series of one metric: a counter over all its labels. 0 when none was counted yet. */
export const total = (samples: Sample[], name: string) =>
  samples.filter((s) => s.name === name).reduce((sum, s) => sum + s.value, 0)

/** Deletes every Redis key under a test's queue prefix. */
export async function removeQueueKeys(redisUrl: string, prefix: string) {
  const redis = new Redis(redisUrl)
  try {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      if (keys.length > 0) await redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
}
