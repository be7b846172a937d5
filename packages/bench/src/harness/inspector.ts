/**
 * What a Node process of the benchmark's own keeps once V8 has collected: its resident memory and
 * `process.memoryUsage()` after a full garbage collection, asked through the inspector. Resident
 * memory read at an arbitrary moment holds whatever garbage V8 has not collected yet (after a
 * load, until its memory reducer runs: the soak's API read 459 MB, then 186 MB a minute later with
 * no request between), so only this says whether a process keeps more as messages pile up.
 *
 * The process is started with `inspectorOptions(port)` in its NODE_OPTIONS (the inspector's port
 * set, not opened); `openInspector` opens it with SIGUSR1, as `node inspect -p` does.
 */
import { readFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'

/** For the process's NODE_OPTIONS: where its inspector listens once opened (loopback only). */
export const inspectorOptions = (port: number) => `--inspect-port=127.0.0.1:${port}`

/** Opens the inspector of `pid` (started with `inspectorOptions(port)`); resolves once it answers. */
export async function openInspector(pid: number, port: number): Promise<void> {
  process.kill(pid, 'SIGUSR1')
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/json/list`).catch(() => undefined)
    if (res?.ok) return
    await sleep(100)
  }
  throw new Error(`the inspector of process ${pid} did not open on port ${port}`)
}

export interface CollectedMemory {
  /** VmRSS after the collection, bytes. */
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
}

/** A session on a process's inspector (opened with `openInspector`): calls of the DevTools protocol. */
export async function connectInspector(port: number) {
  const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
    webSocketDebuggerUrl: string
  }>
  if (!target) throw new Error(`no inspector target on port ${port}`)
  const socket = new WebSocket(target.webSocketDebuggerUrl)
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true })
    socket.addEventListener('error', reject, { once: true })
  })
  const waiting = new Map<number, (reply: { result?: unknown; error?: unknown }) => void>()
  socket.addEventListener('message', (event) => {
    const reply = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: unknown }
    if (reply.id === undefined) return
    waiting.get(reply.id)?.(reply)
    waiting.delete(reply.id)
  })
  let next = 0
  return {
    call: (method: string, params: object = {}) =>
      new Promise<unknown>((resolve, reject) => {
        const id = ++next
        waiting.set(id, (reply) =>
          reply.error ? reject(new Error(JSON.stringify(reply.error))) : resolve(reply.result),
        )
        socket.send(JSON.stringify({ id, method, params }))
      }),
    close: () => socket.close(),
  }
}

/** Two full collections in process `pid` (inspector open on `port`), then what it holds. */
export async function memoryAfterCollection(pid: number, port: number): Promise<CollectedMemory> {
  const session = await connectInspector(port)
  try {
    await session.call('HeapProfiler.collectGarbage')
    await session.call('HeapProfiler.collectGarbage')
    const evaluated = (await session.call('Runtime.evaluate', {
      expression: 'JSON.stringify(process.memoryUsage())',
      returnByValue: true,
    })) as { result: { value: string } }
    const usage = JSON.parse(evaluated.result.value) as Omit<CollectedMemory, 'rss'>
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1]
    return { ...usage, rss: Number(kb) * 1024 }
  } finally {
    session.close()
  }
}

/**
 * Starts V8's CPU profiler in the process (inspector open on `port`); the answer stops it and
 * gives the profile (a `.cpuprofile`, for Chrome's DevTools or speedscope).
 */
export async function startCpuProfile(port: number): Promise<() => Promise<unknown>> {
  const session = await connectInspector(port)
  await session.call('Profiler.enable')
  await session.call('Profiler.start')
  return async () => {
    try {
      const { profile } = (await session.call('Profiler.stop')) as { profile: unknown }
      return profile
    } finally {
      session.close()
    }
  }
}
