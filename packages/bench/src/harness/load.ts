/**
 * HTTP load from autocannon in a child process, so the load generator never shares an event loop
 * with the server it measures.
 */
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { median } from './stats.ts'

export interface Run {
  requestsPerSecond: number
  p99: number
  non2xx: number
  errors: number
  /** Answers by HTTP status (autocannon's `statusCodeStats`), to say what a failed run failed with. */
  statusCodes?: Record<string, number>
}

export interface Load {
  url: string
  headers?: Record<string, string>
  body: string
  connections: number
  seconds: number
  /**
   * Each request's own numbers in place of `body`'s `NUMBER`s (`numberedBodies`, continuing this
   * process's count), e.g. a recipient per message: what a per-recipient frequency cap needs.
   */
  numbered?: boolean
}

/** Where a `numbered` body takes a number of its own, one per occurrence and request. */
export const NUMBER = '[<n>]'
/**
 * The next number `numberedBodies` hands out in this process: nine digits, so `+5531${n}` is a valid
 * phone. A numbered autocannon run continues it in its child and hands back where it stopped.
 */
export const numbering = { next: 100_000_000 }

/** `body` with every `NUMBER` replaced by the next number, never the same twice: a new body per call. */
export function numberedBodies(body: string): () => string {
  const parts = body.split(NUMBER)
  return () => {
    let out = parts[0] as string
    for (let i = 1; i < parts.length; i++) out += String(numbering.next++) + parts[i]
    return out
  }
}

/**
 * autocannon in a child process: POSTs `body` on `connections` connections for `seconds` (with
 * `numbered`, autocannon's API in `autocannon-numbered.ts`, a new body per request).
 */
export function autocannon(load: Load): Promise<Run> {
  const bin = createRequire(import.meta.url).resolve('autocannon/autocannon.js')
  const headers = { 'content-type': 'application/json', ...load.headers }
  let args: string[]
  if (load.numbered) {
    const options = { ...load, headers, from: numbering.next }
    args = [new URL('./autocannon-numbered.ts', import.meta.url).pathname, JSON.stringify(options)]
  } else {
    args = [bin, '-c', String(load.connections), '-d', String(load.seconds), '-m', 'POST', '--json']
    args.push('-b', load.body)
    for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`)
    args.push(load.url)
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (chunk) => {
      out += chunk
    })
    child.on('error', reject)
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}`))
      const result = JSON.parse(out)
      if (load.numbered) numbering.next = result.next
      resolve({
        requestsPerSecond: result.requests.average,
        p99: result.latency.p99,
        non2xx: result.non2xx,
        errors: result.errors,
        statusCodes: Object.fromEntries(
          Object.entries((result.statusCodeStats ?? {}) as Record<string, { count: number }>).map(
            ([code, { count }]) => [code, count],
          ),
        ),
      })
    })
  })
}

/** Refuses a run with failed answers: a figure that counts errors is no figure. */
export function assertClean(name: string, run: Run) {
  if (run.non2xx > 0 || run.errors > 0) {
    const codes = JSON.stringify(run.statusCodes ?? {})
    throw new Error(
      `${name}: ${run.non2xx} non-2xx answers (${codes}) and ${run.errors} errors during the run`,
    )
  }
}

/**
 * Waits for the requests still in flight when autocannon stopped to end, before the queue is
 * emptied: an obliterate holds Redis for a moment, and would time out their enqueue.
 */
export const settle = () => new Promise((resolve) => setTimeout(resolve, 1000))

export const medianRun = (runs: Run[]): Run => ({
  requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
  p99: median(runs.map((r) => r.p99)),
  non2xx: 0,
  errors: 0,
})
