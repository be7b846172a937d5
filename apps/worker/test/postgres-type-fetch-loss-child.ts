// Run by postgres-type-fetch-loss.test.ts in its own process: a crash here must not take the test
// runner down. Every new postgres.js connection first reads the array types (`fetch_types`); 3.4.9
// drops that read's promise (porsager/postgres#1192), so a connection reset during it was an
// unhandled rejection that ended the process: a worker exited on `read ECONNRESET` while Postgres
// restarted. A proxy resets the connection as that read goes out.
import net from 'node:net'
import { createDb } from '@dispatch/db'

const target = new URL(process.env.DATABASE_URL as string)
let reset = false
const proxy = net.createServer((client) => {
  const upstream = net.connect(Number(target.port || 5432), target.hostname)
  client.on('data', (chunk: Buffer) => {
    if (!reset && chunk.includes('typcategory')) {
      reset = true
      upstream.destroy()
      client.resetAndDestroy()
      return
    }
    upstream.write(chunk)
  })
  upstream.on('data', (chunk: Buffer) => client.write(chunk))
  for (const [side, other] of [
    [client, upstream],
    [upstream, client],
  ] as const) {
    side.on('error', () => other.destroy())
    side.on('close', () => other.destroy())
  }
})
await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
const url = new URL(target)
url.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`

const { sql, close } = createDb(url.toString(), { max: 1 })
const first = await sql`select 1 as one`.then(
  () => 'answered',
  (e: { code?: string }) => e.code,
)
// Let a dropped rejection surface before the pool is used again.
await new Promise((resolve) => setTimeout(resolve, 100))
const [after] = await sql<{ one: number }[]>`select 1 as one`
await close()
proxy.close()
process.stdout.write(JSON.stringify({ reset, first, after: after?.one }))
