/**
 * The load of `switched-load.ts`, in a process of its own: autocannon's connections POSTing one body
 * without pause, every request carrying the API key the parent last set. Each connection takes a
 * new key with its next request (set as its last answer lands), so a switch is complete one answer
 * per connection later. Messages from the parent, each answered once done:
 *
 * - `{op: 'key', key}`: the key of the requests from now on;
 * - `{op: 'count'}`: the answers since the last count (2xx and others), and counting starts again;
 * - `{op: 'pause'}` / `{op: 'resume'}`: the connections closed (autocannon stopped) or opened again;
 * - `stop`: exits.
 */
import { createRequire } from 'node:module'

interface Client {
  setHeaders(headers: Record<string, string>): void
  key?: string
}
interface Instance {
  on(event: 'response', listener: (client: Client, statusCode: number) => void): void
  on(event: 'start', listener: () => void): void
  stop(): void
}
const autocannon = createRequire(import.meta.url)('autocannon') as (
  options: object,
  done: (error: Error | null) => void,
) => Instance

const options = JSON.parse(process.argv[2] ?? '{}') as {
  url: string
  body: string
  connections: number
  headers: Record<string, string>
  key: string
}

let key = options.key
let ok = 0
let failed = 0
let instance: Instance | undefined
let stopped: Promise<void> | undefined
const answer = (message: object) => process.send?.(message)

function start(): Promise<void> {
  return new Promise((resolve) => {
    let closed: () => void = () => {}
    stopped = new Promise((done) => {
      closed = done
    })
    instance = autocannon(
      {
        url: options.url,
        method: 'POST',
        body: options.body,
        headers: { ...options.headers, 'x-api-key': key },
        connections: options.connections,
        // Runs until paused or stopped.
        duration: 24 * 3600,
      },
      () => closed(),
    )
    instance.on('response', (client, statusCode) => {
      if (statusCode >= 200 && statusCode < 300) ok++
      else failed++
      if (client.key !== key) {
        client.setHeaders({ ...options.headers, 'x-api-key': key })
        client.key = key
      }
    })
    instance.on('start', resolve)
  })
}

process.on('message', async (message: { op: string; key?: string } | 'stop') => {
  if (message === 'stop') {
    instance?.stop()
    process.exit(0)
  }
  switch (message.op) {
    case 'key':
      key = message.key as string
      return answer({ op: 'key' })
    case 'count': {
      const counted = { op: 'count', ok, failed }
      ok = 0
      failed = 0
      return answer(counted)
    }
    case 'pause':
      instance?.stop()
      await stopped
      instance = undefined
      return answer({ op: 'pause' })
    case 'resume':
      await start()
      return answer({ op: 'resume' })
  }
})

await start()
answer({ op: 'ready' })
