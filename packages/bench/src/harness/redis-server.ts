/**
 * A redis-server of a benchmark's own, on a free port, without persistence: its `INFO
 * commandstats` and CPU counters see only the benchmark's clients, and the shared Redis's are left
 * alone. `stop()` kills it.
 */
import { spawn } from 'node:child_process'
import { freePort } from '@dispatch/testing'
import type { Redis } from 'ioredis'

export async function startRedisServer() {
  const port = await freePort()
  const binary = process.env.REDIS_SERVER ?? 'redis-server'
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const version = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.once('error', (error) => reject(new Error(`could not start ${binary}: ${error.message}`)))
    child.once('exit', (code) => reject(new Error(`${binary} exited with ${code}:\n${out}`)))
    child.stdout.on('data', (chunk) => {
      out += chunk
      if (out.includes('Ready to accept connections')) {
        resolve(/Redis version=([\d.]+)/.exec(out)?.[1] ?? 'unknown version')
      }
    })
  })
  child.stdout.resume()
  return {
    url: `redis://127.0.0.1:${port}`,
    version: `Redis ${version}`,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}

export type Counts = Map<string, number>

/** Calls per command since the server started (`INFO commandstats`). */
export async function commandCounts(redis: Redis): Promise<Counts> {
  const counts: Counts = new Map()
  for (const match of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    counts.set(match[1] as string, Number(match[2]))
  }
  return counts
}

/** The server's CPU time so far, user and system, in seconds. */
export async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu')
  const read = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0)
  return read('used_cpu_user') + read('used_cpu_sys')
}

/**
 * Calls per message of each command, one column per case, one row per phase and command; commands
 * under 0.01 per message in every case (connection setup, idle waits, timers) are left out.
 */
export function printCountTable(cases: { name: string; phases: Record<string, Counts> }[], messages: number) {
  const phases = Object.keys(cases[0]?.phases ?? {})
  const rows: string[][] = [['phase', 'command', ...cases.map((c) => c.name)]]
  for (const phase of phases) {
    const names = new Set(cases.flatMap((c) => [...(c.phases[phase]?.keys() ?? [])]))
    const sorted = [...names].sort(
      (a, b) => (cases[0]?.phases[phase]?.get(b) ?? 0) - (cases[0]?.phases[phase]?.get(a) ?? 0),
    )
    for (const name of sorted) {
      if (cases.every((c) => (c.phases[phase]?.get(name) ?? 0) / messages < 0.005)) continue
      rows.push([phase, name, ...cases.map((c) => ((c.phases[phase]?.get(name) ?? 0) / messages).toFixed(2))])
    }
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => r[i]?.length ?? 0))) ?? []
  for (const row of rows) {
    console.log(
      `    ${row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ')}`,
    )
  }
}
