/**
 * The fan-out benchmark's receiver, run in a child process (`startReceiver`): it plays the sender's
 * server, which is another machine in production, so its work must not take the event loop of the
 * side being measured, and it counts what arrived rather than trusting the sending side. Answers
 * every request 204; verifies a sample of signatures with the standardwebhooks library.
 */
import type { ChildProcess } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Webhook } from 'standardwebhooks'
import { forkChild } from '../harness/child.ts'

/** Parent → receiver: count the next `expect` requests; `secrets` by path, to verify a sample. */
export interface Arm {
  expect: number
  secrets: Record<string, string>
}
/** Receiver → parent, once `expect` requests have arrived. */
export interface Tally {
  received: number
  distinct: number
  verified: number
  bad: number
}

/** Every this many requests, one is verified with the standardwebhooks library. */
const VERIFY_EVERY = 500

function runReceiver() {
  let arm: Arm | undefined
  let verifiers = new Map<string, Webhook>()
  let ids = new Set<string>()
  let tally: Tally = { received: 0, distinct: 0, verified: 0, bad: 0 }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      res.writeHead(204).end()
      const n = ++tally.received
      // One event goes to several endpoints: a delivery is the event's id at its endpoint's path.
      ids.add(`${req.url} ${req.headers['webhook-id']}`)
      if (n % VERIFY_EVERY === 1) {
        try {
          verifiers.get(req.url ?? '')?.verify(Buffer.concat(chunks).toString('utf8'), req.headers as never)
          tally.verified++
        } catch {
          tally.bad++
        }
      }
      if (arm && n === arm.expect) process.send?.({ ...tally, distinct: ids.size } satisfies Tally)
    })
  })
  process.on('message', (message: Arm) => {
    arm = message
    verifiers = new Map(Object.entries(message.secrets).map(([path, secret]) => [path, new Webhook(secret)]))
    ids = new Set()
    tally = { received: 0, distinct: 0, verified: 0, bad: 0 }
    process.send?.('armed')
  })
  // The parent going away (finished or crashed) ends the receiver.
  process.on('disconnect', () => process.exit(0))
  server.keepAliveTimeout = 30_000
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }))
}

export async function startReceiver(): Promise<{ child: ChildProcess; url: string }> {
  const receiver = await forkChild<{ port: number }>(fileURLToPath(import.meta.url), { what: 'receiver' })
  return { child: receiver.process, url: `http://127.0.0.1:${receiver.ready.port}` }
}

/** Arms the receiver for `expect` requests; resolves when they have all arrived. */
export async function armReceiver(child: ChildProcess, arm: Arm): Promise<() => Promise<Tally>> {
  const tally = new Promise<Tally>((resolve) => {
    child.on('message', function done(message: Tally | string) {
      if (typeof message === 'string') return
      child.off('message', done)
      resolve(message)
    })
  })
  await new Promise<void>((resolve) => {
    child.on('message', function armed(message) {
      if (message !== 'armed') return
      child.off('message', armed)
      resolve()
    })
    child.send(arm)
  })
  return () => tally
}

/** Every request arrived once, and the sampled signatures verified. */
export function checkTally(side: string, tally: Tally, expected: number) {
  if (tally.distinct !== expected || tally.bad > 0 || tally.verified === 0) {
    throw new Error(
      `${side}: ${tally.received} requests, ${tally.distinct} distinct of ${expected}; ` +
        `${tally.verified} signatures verified, ${tally.bad} bad`,
    )
  }
}

if (import.meta.main) runReceiver()
