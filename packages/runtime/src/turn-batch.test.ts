import { describe, expect, it } from 'vitest'
import { turnBatched } from './turn-batch.ts'

/** A batcher that records each batch it ran, answering each item doubled. */
function recorded(defer?: 'turn' | 'microtask') {
  const batches: number[][] = []
  const call = turnBatched(async (items: number[]) => {
    batches.push(items)
    return items.map((n) => n * 2)
  }, defer)
  return { call, batches }
}

describe('turnBatched', () => {
  it('runs the calls of one turn together, each answered its own', async () => {
    const { call, batches } = recorded()
    const first = [call(1), call(2)]
    // Later in the same turn, after a microtask: still the same batch.
    await Promise.resolve()
    const answers = await Promise.all([...first, call(3)])
    expect(answers).toEqual([2, 4, 6])
    expect(batches).toEqual([[1, 2, 3]])
  })

  it('with microtask, runs only the calls made before the current microtasks ran', async () => {
    const { call, batches } = recorded('microtask')
    const first = [call(1), call(2)]
    await Promise.resolve()
    await Promise.resolve()
    const answers = await Promise.all([...first, call(3)])
    expect(answers).toEqual([2, 4, 6])
    expect(batches).toEqual([[1, 2], [3]])
    // Run before the turn's end: before anything deferred with setImmediate then.
    const order: string[] = []
    setImmediate(() => order.push('immediate'))
    await call(4).then(() => order.push('batch'))
    expect(order[0]).toBe('batch')
  })

  it('hands an into call its answer on its target, in the same batch as the promised calls', async () => {
    const { call, batches } = recorded()
    const got: Array<number | string> = []
    const target = { resolve: (n: number) => got.push(n), reject: () => got.push('rejected') }
    call.into(5, target)
    expect(await call(6)).toBe(12)
    expect(got).toEqual([10])
    expect(batches).toEqual([[5, 6]])
    const failing = turnBatched(async (_: number[]): Promise<number[]> => {
      throw new Error('redis away')
    })
    failing.into(1, target)
    await expect(failing(2)).rejects.toThrow('redis away')
    expect(got).toEqual([10, 'rejected'])
  })

  it('rejects every call of a batch whose run throws', async () => {
    const failing = turnBatched(async (_: number[]): Promise<number[]> => {
      throw new Error('redis away')
    })
    const results = await Promise.allSettled([failing(1), failing(2)])
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected'])
  })
})
