import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { childProcessEnv } from './env.ts'
import { waitFor } from './wait.ts'

/**
 * The service's own entry points run as ops run them, each in a process of its own: for the tests
 * that go past one process and for the scaling benchmark.
 */
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
  /** SIGTERM, as an orchestrator stops it; SIGKILL if it has not exited `graceMs` later. */
  stop(graceMs?: number): Promise<void>
}

export interface ServiceOptions {
  /** Passes this process's whole environment on too (else only PATH and HOME). */
  inheritEnv?: boolean
  /** Called with each log line as it is written (to print warnings as they come, say). */
  onLine?: (line: LogLine) => void
}

/**
 * Starts an entry point (`ENTRY_POINTS`) in a process of its own, with only PATH, HOME and `env`
 * (or this process's whole environment too, `inheritEnv`); its JSON log lines are kept.
 */
export function startService(
  name: string,
  entry: string,
  env: Record<string, string>,
  options: ServiceOptions = {},
): Service {
  const base = childProcessEnv(options.inheritEnv ?? false)
  const child = spawn(process.execPath, [entry], {
    cwd: repoDir,
    env: { ...base, LOG_FORMAT: 'json', ...env },
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
      let entry: LogLine
      try {
        entry = JSON.parse(line) as LogLine
      } catch {
        entry = { msg: line }
      }
      lines.push(entry)
      options.onLine?.(entry)
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
    async stop(graceMs = 20_000) {
      if (!running()) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      await exited
      clearTimeout(timer)
    },
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
