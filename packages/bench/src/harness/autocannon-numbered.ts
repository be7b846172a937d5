/**
 * autocannon for a `numbered` load (started by `load.ts`'s `autocannon`, in a process of its own):
 * its API rather than its command line, so that each request gets a body of its own, every `NUMBER`
 * the next number from `from` (`numberedBodies`). Prints the result as the command line's `--json`
 * does, plus `next`: the first number left unused, where the parent's count goes on.
 */
import { createRequire } from 'node:module'
import { type Load, numberedBodies, numbering } from './load.ts'

type Result = { next?: number }
const run = createRequire(import.meta.url)('autocannon') as (
  options: object,
  done: (error: Error | null, result: Result) => void,
) => unknown

const load = JSON.parse(process.argv[2] ?? '{}') as Load & { from: number }
numbering.next = load.from
const body = numberedBodies(load.body)
run(
  {
    url: load.url,
    connections: load.connections,
    duration: load.seconds,
    requests: [
      {
        method: 'POST',
        headers: load.headers,
        setupRequest: (request: object) => ({ ...request, body: body() }),
      },
    ],
  },
  (error, result) => {
    if (error) throw error
    result.next = numbering.next
    process.stdout.write(JSON.stringify(result))
  },
)
