/**
 * Gathers the calls made in one turn of the event loop and runs them together at its end: under
 * load, one Redis command for many requests, and a lone request waits only for the current turn.
 * `run` answers each item in order; when it throws, every call of the turn rejects with its error.
 */
export function turnBatched<T, R>(
  run: (items: T[]) => Promise<R[]>,
  /**
   * `microtask`: gathered only until the current callback's microtasks run, not the whole turn:
   * the batch's commands then join the auto-pipeline the callback's other commands wait in (ioredis
   * sends it at the turn's end, and holds the next one until its replies are in), so their answer
   * comes with those, not a round trip after. For cheap commands a call of their own is no cost;
   * for a script, fewer calls may be worth the wait.
   */
  defer: 'turn' | 'microtask' = 'turn',
): (item: T) => Promise<R> {
  const schedule = defer === 'microtask' ? queueMicrotask : setImmediate
  let pending: Array<{ item: T; resolve: (value: R) => void; reject: (error: unknown) => void }> = []
  const flush = async () => {
    const batch = pending
    pending = []
    try {
      const results = await run(batch.map((call) => call.item))
      for (const [i, call] of batch.entries()) call.resolve(results[i] as R)
    } catch (error) {
      for (const call of batch) call.reject(error)
    }
  }
  return (item) =>
    new Promise<R>((resolve, reject) => {
      if (pending.push({ item, resolve, reject }) === 1) schedule(flush)
    })
}
