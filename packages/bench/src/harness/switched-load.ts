/**
 * Load whose API key switches while it runs (switched-load-child.ts, in a process of its own): what
 * `pairedSlices` uses to set a server's CPU a request for one key against another's a second apart,
 * not five, where a shared machine's drift between the two is smaller than the difference sought.
 */
import { fork } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { processCpuNsByThread } from './cpu.ts'
import { median, medianInterval } from './stats.ts'

export interface SwitchedLoad {
  /** Requests from now on carry `key` (each connection from its next request). */
  key(key: string): Promise<void>
  /** The answers since the last count: 2xx and the others. */
  count(): Promise<{ ok: number; failed: number }>
  /**
   * Closes the connections (a request the server took before still finishes there: wait a moment
   * before emptying what it stored), and opens them again.
   */
  pause(): Promise<void>
  resume(): Promise<void>
  stop(): Promise<void>
}

export function startSwitchedLoad(load: {
  url: string
  body: string
  connections: number
  key: string
  headers?: Record<string, string>
}): Promise<SwitchedLoad> {
  const options = { ...load, headers: { 'content-type': 'application/json', ...load.headers } }
  const child = fork(new URL('./switched-load-child.ts', import.meta.url), [JSON.stringify(options)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  // One request at a time: each answer is the next message of its op.
  const ask = <T>(op: string, extra: object = {}) =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number) => reject(new Error(`the load exited with ${code}`))
      child.once('exit', onExit)
      child.once('message', (message) => {
        child.off('exit', onExit)
        const answer = message as { op: string } & T
        if (answer.op !== op) reject(new Error(`the load answered ${answer.op} to ${op}`))
        else resolve(answer)
      })
      child.send({ op, ...extra })
    })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`the load exited with ${code} before it was ready`)))
    child.once('message', () =>
      resolve({
        key: (key) => ask<void>('key', { key }),
        count: () => ask('count'),
        pause: () => ask<void>('pause'),
        resume: () => ask<void>('resume'),
        async stop() {
          if (child.exitCode === null) child.send('stop')
          await exited
        },
      }),
    )
  })
}

/** One slice: a side's requests answered over it and the server's CPU meanwhile, in all and by thread. */
export interface Slice {
  side: string
  requests: number
  cpuNs: number
  /** `cpuNs` by thread name (harness/cpu.ts `processCpuNsByThread`). */
  threads: Map<string, number>
}

/**
 * The sides' slices in blocks, each block every side once, for `blocks` blocks: forward then
 * backward (`ABCD`, `DCBA`), each pair of blocks starting one side further along, so a side is as
 * often before another as after it and drift within a block falls on both of a pair alike. Before
 * each slice the load switches to its side's key and runs `settleMs` unmeasured (the switch reaches
 * every connection); every `blocksPerSegment` blocks it pauses for `between` (the benchmark empties
 * what was stored) and warms up again for a slice's length. Throws on a non-2xx answer.
 */
export async function pairedSlices(options: {
  load: SwitchedLoad
  serverPid: number | undefined
  sides: Array<{ name: string; key: string }>
  blocks: number
  sliceMs: number
  settleMs?: number
  blocksPerSegment?: number
  between?: () => Promise<unknown>
}): Promise<Slice[][]> {
  const { load, sides, sliceMs } = options
  const settleMs = options.settleMs ?? 100
  const perSegment = options.blocksPerSegment ?? 10
  const cpu = async () => {
    const threads = await processCpuNsByThread(options.serverPid)
    if (threads === undefined) throw new Error('no CPU reading of the server (Linux /proc only)')
    return threads
  }
  const out: Slice[][] = []
  for (let b = 0; b < options.blocks; b++) {
    if (b > 0 && b % perSegment === 0) {
      await load.pause()
      await options.between?.()
      await load.resume()
      await sleep(sliceMs)
    }
    const block: Slice[] = []
    for (const side of blockOrder(sides, b)) {
      await load.key(side.key)
      await sleep(settleMs)
      await load.count()
      const before = await cpu()
      await sleep(sliceMs)
      const after = await cpu()
      const { ok, failed } = await load.count()
      if (failed > 0) throw new Error(`${side.name}: ${failed} answers were not 2xx`)
      const threads = new Map([...after].map(([name, ns]) => [name, ns - (before.get(name) ?? 0)]))
      const cpuNs = [...threads.values()].reduce((sum, ns) => sum + ns, 0)
      block.push({ side: side.name, requests: ok, cpuNs, threads })
    }
    out.push(block)
  }
  return out
}

/**
 * The sides' order in block `b`: forward, then backward, each pair of blocks rotated one further
 * (`ABCD`, `DCBA`, `BCDA`, `ADCB`…), so over whole cycles each side runs as often before any other
 * as after it, and a pair's distance is the same either way.
 */
export function blockOrder<T>(sides: readonly T[], b: number): T[] {
  const start = Math.floor(b / 2) % sides.length
  const rotated = [...sides.slice(start), ...sides.slice(0, start)]
  return b % 2 === 0 ? rotated : rotated.toReversed()
}

/**
 * `figure`'s CPU a request against `baseline`'s over paired slices: each block's ratio, their
 * median and its 90 % distribution-free interval, and the ratio of the two sides' totals (every
 * slice's CPU over every slice's requests).
 */
export function compareSlices(blocks: Slice[][], figure: string, baseline: string) {
  const perRequest = (block: Slice[], side: string) => {
    const slice = block.find((s) => s.side === side)
    return slice && slice.requests > 0 ? slice.cpuNs / slice.requests : Number.NaN
  }
  // A block where either side had no answer (a stall) pairs nothing.
  const ratios = blocks
    .map((block) => perRequest(block, figure) / perRequest(block, baseline))
    .filter(Number.isFinite)
  // µs a request over every slice of a side: its whole CPU, or one thread's (by name).
  const total = (side: string, thread?: string) => {
    const slices = blocks.flatMap((block) => block.filter((s) => s.side === side))
    const requests = slices.reduce((sum, s) => sum + s.requests, 0)
    const ns = (s: Slice) => (thread === undefined ? s.cpuNs : (s.threads.get(thread) ?? 0))
    return slices.reduce((sum, s) => sum + ns(s), 0) / requests / 1000
  }
  const names = new Set(blocks.flatMap((block) => block.flatMap((s) => [...s.threads.keys()])))
  return {
    ratios,
    median: median(ratios),
    interval: medianInterval(ratios),
    figureUs: total(figure),
    baselineUs: total(baseline),
    /** Where the difference is: each thread's µs a request on either side. */
    threads: [...names].map((name) => ({
      name,
      figureUs: total(figure, name),
      baselineUs: total(baseline, name),
    })),
  }
}
