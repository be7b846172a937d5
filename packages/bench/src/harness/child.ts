/**
 * A benchmark's helper in a process of its own (a server under test, a worker, a webhook
 * receiver), so it never shares an event loop with what measures it: `script` forked with `env` on
 * top of this process's, ready once it sends its first message (its URL, its port…).
 */
import { type ChildProcess, fork } from 'node:child_process'
import { processCpuSeconds } from './cpu.ts'

export interface BenchChild<Ready> {
  /** The child's first message. */
  ready: Ready
  process: ChildProcess
  /** Its CPU time so far (user + system), in seconds; undefined off Linux. */
  cpuSeconds(): Promise<number | undefined>
  /** Ends it (SIGTERM, or a `stop` message for a child that listens for one) and waits until it has. */
  stop(): Promise<void>
}

export function forkChild<Ready>(
  script: URL | string,
  options: {
    /** Names the child in the error when it exits before it is ready. */
    what: string
    args?: string[]
    env?: Record<string, string | undefined>
    stopWith?: 'SIGTERM' | 'message'
  },
): Promise<BenchChild<Ready>> {
  const child = fork(script, options.args ?? [], {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`${options.what} exited with ${code} before it was ready`)))
    child.once('message', (ready) => {
      resolve({
        ready: ready as Ready,
        process: child,
        cpuSeconds: () => processCpuSeconds(child.pid),
        async stop() {
          if (child.exitCode !== null) return
          if (options.stopWith === 'message') child.send('stop')
          else child.kill('SIGTERM')
          await exited
        },
      })
    })
  })
}
