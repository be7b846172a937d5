/**
 * CPU counters a benchmark reads to say what bounds a figure, from /proc (Linux only; USER_HZ is
 * 100): a process's, this process's exited children's, the whole machine's, and the Postgres
 * backends serving a database.
 */
import { readFile } from 'node:fs/promises'
import type { Sql } from '@dispatch/db'

/** A process's CPU time from /proc (USER_HZ is 100 on Linux), or undefined where there is none. */
export async function processCpuSeconds(pid: number | undefined): Promise<number | undefined> {
  try {
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? []
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return undefined
  }
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
