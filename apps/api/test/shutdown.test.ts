import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { startSmtpServer, type TestSmtpServer, waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { ADMIN, createWorld, type TestWorld } from './helpers.ts'

const apiDir = fileURLToPath(new URL('..', import.meta.url))
const workerDir = fileURLToPath(new URL('../../worker/', import.meta.url))
const repoDir = fileURLToPath(new URL('../../../', import.meta.url))

let world: TestWorld
let smtp: TestSmtpServer
const children = new Set<ChildProcess>()
beforeAll(async () => {
  world = await createWorld()
  smtp = await startSmtpServer()
})
afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
  await smtp?.close()
  await world?.close()
})

interface Running {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** Runs one of the real entry points in a process of its own, with only the environment given. */
const run = (cwd: string, script: string, env: Record<string, string>) =>
  runCommand(process.execPath, [script], cwd, env)

function runCommand(command: string, args: string[], cwd: string, env: Record<string, string>): Running {
  const child = spawn(command, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  let out = ''
  let err = ''
  child.stdout?.on('data', (chunk) => {
    out += chunk
  })
  child.stderr?.on('data', (chunk) => {
    err += chunk
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  )
  return { child, stdout: () => out, stderr: () => err, exited }
}

const worldEnv = () => ({
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: world.redisUrl,
  QUEUE_PREFIX: world.queuePrefix,
  LOG_LEVEL: 'info',
})

const apiEnv = (env: Record<string, string> = {}) => ({
  ...worldEnv(),
  PORT: '0',
  HOST: '127.0.0.1',
  ADMIN_TOKENS: `ana=${ADMIN.ana}`,
  ...env,
})

/** Resolves within `ms` or fails naming what the process printed. */
async function exitWithin(proc: Running, ms: number) {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no exit within ${ms} ms\n${proc.stdout()}\n${proc.stderr()}`)),
      ms,
    )
  })
  try {
    return await Promise.race([proc.exited, timeout])
  } finally {
    clearTimeout(timer)
  }
}

const untilLogged = (proc: Running, text: string) =>
  waitFor(
    () => {
      if (proc.child.exitCode !== null) {
        throw new Error(`exited ${proc.child.exitCode} before logging "${text}"\n${proc.stderr()}`)
      }
      return proc.stdout().includes(text)
    },
    { timeoutMs: 20_000, what: `"${text}" in the log` },
  )

describe('the API process', () => {
  it('serves, and on SIGTERM shuts down cleanly with exit code 0', async () => {
    // The campaign feeder turning all the time: the close stops it before its connections end.
    const api = run(apiDir, 'src/server.ts', apiEnv({ CAMPAIGN_FEED_INTERVAL_MS: '10' }))
    await untilLogged(api, 'listening on http://')
    const address = api.stdout().match(/listening on (http:\/\/[\d.]+:\d+)/)?.[1]
    expect(address).toBeDefined()

    const res = await fetch(`${address}/healthz`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ status: 'ok' })

    api.child.kill('SIGTERM')
    const { code, signal } = await exitWithin(api, 10_000)
    expect({ code, signal }).toEqual({ code: 0, signal: null })
    expect(api.stdout()).toContain('shutting down')
    // Nothing it was doing failed under the close (a warning or an error logged).
    expect(api.stdout()).not.toMatch(/"level":(40|50|60)/)
    await expect(fetch(`${address}/healthz`)).rejects.toThrow()
  })

  it('refuses to start in production without ADMIN_TOKENS (exit 1, naming it)', async () => {
    const { ADMIN_TOKENS: _, ...env } = apiEnv({ APP_ENV: 'production' })
    const api = run(apiDir, 'src/server.ts', env)
    const { code } = await exitWithin(api, 10_000)
    expect(code).toBe(1)
    expect(api.stderr()).toContain('ADMIN_TOKENS')
    expect(api.stdout()).not.toContain('listening')
  })

  it('refuses a PORT that is not a number (exit 1, naming it)', async () => {
    const api = run(apiDir, 'src/server.ts', apiEnv({ PORT: 'abc' }))
    const { code } = await exitWithin(api, 10_000)
    expect(code).toBe(1)
    expect(api.stderr()).toMatch(/^\s*PORT: .*"abc"/m)
    expect(api.stdout()).not.toContain('listening')
  })
})

describe('the worker process', () => {
  it('runs, and on SIGTERM shuts down cleanly with exit code 0', async () => {
    const worker = run(workerDir, 'src/main.ts', { ...worldEnv(), SMTP_URL: smtp.url })
    await untilLogged(worker, 'Dispatch worker running')

    worker.child.kill('SIGTERM')
    const { code, signal } = await exitWithin(worker, 10_000)
    expect({ code, signal }).toEqual({ code: 0, signal: null })
    expect(worker.stdout()).toContain('shutting down')
  })
})

describe('the development runner (pnpm start, scripts/run.sh)', () => {
  it('runs both processes with lines for a person, and a SIGTERM stops both once and cleanly', async () => {
    const runner = runCommand('bash', ['scripts/run.sh'], repoDir, {
      ...apiEnv({ LOG_FORMAT: 'pretty' }),
      SMTP_URL: smtp.url,
    })
    // The runner's processes have process groups of their own: a SIGKILL of the runner would leave
    // them running, so whatever happens it is stopped the way a person stops it.
    onTestFinished(async () => {
      if (runner.child.exitCode === null && runner.child.signalCode === null) {
        runner.child.kill('SIGTERM')
        await exitWithin(runner, 20_000).catch(() => {})
      }
    })
    await untilLogged(runner, 'Dispatch worker running')
    await untilLogged(runner, 'listening on http://')
    const out = runner.stdout()
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(api\): Dispatch API listening on http:/m)
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(worker\): Dispatch worker running/m)
    expect(out).not.toMatch(/^\{"level"/m)

    runner.child.kill('SIGTERM')
    const { code, signal } = await exitWithin(runner, 20_000)
    expect({ code, signal }, runner.stderr()).toEqual({ code: 0, signal: null })
    expect(runner.stdout()).toMatch(/INFO \(api\): shutting down/)
    expect(runner.stdout()).toMatch(/INFO \(worker\): shutting down/)
    expect(runner.stderr()).toContain('stopped cleanly')
    // Each got one signal: a second one would have cut its shutdown short with exit 1.
    expect(runner.stdout()).not.toContain('second SIGTERM')
  })
})
