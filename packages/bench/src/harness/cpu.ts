/**
 * CPU counters a benchmark reads to say what bounds a figure, from /proc (Linux only; USER_HZ is
 * 100): a process's (and its resident memory), this process's exited children's, the whole
 * machine's, the Postgres backends serving a database and the Postgres server's own processes.
 */
import { readdir, readFile } from 'node:fs/promises'
import type { Sql } from '@dispatch/db'

const statFields = async (path: string) =>
  (await readFile(path, 'utf8')).split(') ')[1]?.split(' ').map(Number) ?? []

/** A process's CPU time from /proc (USER_HZ is 100 on Linux), or undefined where there is none. */
export async function processCpuSeconds(pid: number | undefined): Promise<number | undefined> {
  try {
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? []
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return undefined
  }
}

/**
 * A process's CPU time so far in nanoseconds by thread, from the first field of each
 * /proc/<pid>/task/<tid>/schedstat (`processCpuSeconds` counts in ticks of 10 ms, too coarse for a
 * slice of a second), summed by thread name: `main` for the process's own, else the kernel's name
 * for it (`V8Worker`: V8's collector and compiler; `libuv-worker`), or undefined where there is
 * none. A thread that has exited is not counted: read it across spans its threads live through,
 * as a server's are.
 */
export async function processCpuNsByThread(
  pid: number | undefined,
): Promise<Map<string, number> | undefined> {
  try {
    const tasks = await readdir(`/proc/${pid}/task`)
    const threads = await Promise.all(
      tasks.map(async (tid) => {
        try {
          const [stat, comm] = await Promise.all([
            readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8'),
            tid === String(pid) ? 'main' : readFile(`/proc/${pid}/task/${tid}/comm`, 'utf8'),
          ])
          return [comm.trim(), Number(stat.split(' ')[0])] as const
        } catch {
          return ['exited', 0] as const
        }
      }),
    )
    const byName = new Map<string, number>()
    for (const [name, ns] of threads) byName.set(name, (byName.get(name) ?? 0) + ns)
    return byName
  } catch {
    return undefined
  }
}

/** A process's resident memory (VmRSS in /proc/<pid>/status), in bytes, or undefined where there is none. */
export async function residentBytes(pid: number | undefined): Promise<number | undefined> {
  try {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1]
    return kb === undefined ? undefined : Number(kb) * 1024
  } catch {
    return undefined
  }
}

/**
 * The Postgres server's own processes (the postmaster, checkpointer, background writer, WAL writer,
 * autovacuum): CPU seconds so far of each, by pid. They serve every database on the server, so on a
 * shared one their figure holds others' work too.
 */
export async function serverProcessesCpu(sql: Sql): Promise<Map<number, number>> {
  const rows = await sql<{ pid: number }[]>`
    select pid from pg_stat_activity where backend_type <> 'client backend'`
  const cpu = new Map<number, number>()
  for (const { pid } of rows) {
    const seconds = await processCpuSeconds(pid)
    if (seconds !== undefined) cpu.set(pid, seconds)
  }
  // The postmaster: every server process's parent.
  const first = rows[0]?.pid
  if (first !== undefined) {
    const parent = (await statFields(`/proc/${first}/stat`).catch(() => []))[1]
    const seconds = parent ? await processCpuSeconds(parent) : undefined
    if (parent && seconds !== undefined) cpu.set(parent, seconds)
  }
  return cpu
}

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
