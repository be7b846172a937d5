// Run by postgres-connection-loss.test.ts in its own process: a crash here must not take the test runner
// down. A transaction's backend is terminated while a statement is in flight; postgres.js then
// rolls back on the dead connection, and 3.4.9 unpatched throws from a setImmediate callback
// (porsager/postgres#1154), which no caller can catch and which ends the process.
import { createDb } from '@dispatch/db'

const url = process.env.DATABASE_URL as string
const { sql, close } = createDb(url, { max: 2 })
const killer = createDb(url, { max: 1 })

let pid: number | undefined
// Its failure is handled from the start: the transaction may fail while the killer's own statement
// is still waiting for its answer, and a rejection nobody handles yet would end the process too.
const failure = sql
  .begin(async (t) => {
    const [row] = await t<{ pid: number }[]>`select pg_backend_pid() as pid`
    pid = row?.pid
    await t`select pg_sleep(5)`
  })
  .then(
    () => undefined,
    (e: { code?: string }) => e.code,
  )
while (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 20))
await killer.sql`select pg_terminate_backend(${pid})`
const error = await failure
// Let any write scheduled on the dead socket run before the pool is used again.
await new Promise((resolve) => setTimeout(resolve, 100))
const [after] = await sql<{ one: number }[]>`select 1 as one`
await Promise.all([close(), killer.close()])
process.stdout.write(JSON.stringify({ error, after: after?.one }))
