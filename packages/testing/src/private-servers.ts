import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process'
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { waitFor } from './wait.ts'

/**
 * Redis and Postgres servers of one test's own, on free ports, for the tests that crash, stop or
 * restart them: the run's shared servers are never stopped or flushed.
 */

const run = promisify(execFile)

/** Whether nothing listens on a port of 127.0.0.1 now. */
const canBind = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })

/**
 * The lowest port the kernel hands to outgoing connections and `listen(0)` (Linux's
 * ip_local_port_range; 32768 where it cannot be read). A port for a child is picked below it: one
 * picked inside it was once taken by some process's outgoing connection between the probe and the
 * child's bind (the walkthroughs' API, EADDRINUSE).
 */
const ephemeralLow = (() => {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0])
    return Number.isInteger(low) && low > 12_000 ? low : 32_768
  } catch {
    return 32_768
  }
})()

/**
 * Ports this process has handed out: none is bound until its child starts, so a second ask must
 * not get the same port back.
 */
const handedOut = new Set<number>()

/**
 * A port nothing listens on now, this process has not handed out before, and outside the range the
 * kernel picks from, for a child to bind. Random across ten thousand ports, so test files running
 * side by side rarely pick the same one.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow - 10_000
  for (let tries = 1; ; tries++) {
    const port = low + Math.floor(Math.random() * 10_000)
    if (handedOut.has(port)) continue
    if ((await canBind(port)) || tries >= 200) {
      handedOut.add(port)
      return port
    }
  }
}

const exitOf = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once('exit', () => resolve())
  })

/** Whether a binary answers `--version` on the PATH. */
const found = (binary: string) => {
  try {
    execFileSync(binary, ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/**
 * What a private server needs and this machine lacks (`redis-server` and `redis-cli`; `initdb` and
 * `pg_ctl`, and a `postgres` user when running as root), or undefined when all are there.
 */
export function privateServerMissing(server: 'redis' | 'postgres'): string | undefined {
  const binaries = server === 'redis' ? ['redis-server', 'redis-cli'] : ['initdb', 'pg_ctl']
  const missing = binaries.filter((binary) => !found(binary))
  if (missing.length > 0) return `${missing.join(' and ')} not found on the PATH`
  if (server === 'postgres') {
    try {
      postgresUser()
    } catch {
      return 'running as root with no postgres user (initdb refuses root)'
    }
  }
  return undefined
}

export interface PrivateRedis {
  url: string
  port: number
  /** SIGKILL, as a crash: what the AOF holds (every acknowledged write) is all that survives. */
  kill(): Promise<void>
  /** Starts it again on the same port and files, once killed. */
  start(): Promise<void>
  /** Kills it and removes its files. Safe to call twice. */
  stop(): Promise<void>
}

/**
 * A redis-server of its own, persisting as production does (docker-compose.yml): the AOF fsynced on
 * every write, `noeviction` (`privateServerMissing('redis')` says whether it can start here).
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'dispatch-redis-'))
  const port = await freePort()
  let child: ChildProcess | undefined
  const kill = async () => {
    if (!child) return
    child.kill('SIGKILL')
    await exitOf(child)
  }
  process.once('exit', () => child?.kill('SIGKILL'))
  const start = async () => {
    // biome-ignore format: the flags read as pairs
    child = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
      '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction',
    ], { stdio: 'ignore' })
    await waitFor(
      async () => {
        const { stdout } = await run('redis-cli', ['-p', String(port), 'ping']).catch(() => ({ stdout: '' }))
        return stdout.trim() === 'PONG'
      },
      { what: `redis-server on port ${port}`, timeoutMs: 10_000, intervalMs: 50 },
    )
  }
  await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    start,
    async stop() {
      await kill()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export interface PrivatePostgres {
  /** The `postgres` database on it, user `postgres`, trust auth. */
  url: string
  /** `pg_ctl stop -m fast`: every connection ended, new ones refused until `start`. */
  stop(): Promise<void>
  start(): Promise<void>
  /** Stops it and removes its cluster. Safe to call twice. */
  destroy(): Promise<void>
}

/** The machine's postgres user, when this process runs as root (initdb refuses root). */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim())
  return { uid: id('-u'), gid: id('-g') }
}

/**
 * A Postgres cluster of its own (initdb, pg_ctl) on a free port, fsync off, trust auth
 * (`privateServerMissing('postgres')` says whether it can start here).
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const user = postgresUser()
  const dir = mkdtempSync(join(tmpdir(), 'dispatch-postgres-'))
  if (user) chownSync(dir, user.uid, user.gid)
  const data = join(dir, 'data')
  const port = await freePort()
  const pg = (binary: string, args: string[]) => run(binary, args, { ...user, cwd: dir })
  await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8'])
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`
  const start = async () => {
    await pg('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-o', options, '-w', 'start'])
  }
  const stop = async () => {
    await pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop'])
  }
  await start()
  let destroyed = false
  // pg_ctl leaves the server running on its own: a test process that dies takes it along.
  const orphan = () => {
    try {
      execFileSync('pg_ctl', ['-D', data, '-m', 'immediate', 'stop'], { ...user, stdio: 'ignore' })
    } catch {}
  }
  process.once('exit', orphan)
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    async destroy() {
      if (destroyed) return
      destroyed = true
      process.off('exit', orphan)
      await stop().catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
