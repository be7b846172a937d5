/** Where a batched call's answer goes: a promise's pair, or an object that takes it as it lands. */
export interface Settle<R> {
  resolve(value: R): void
  reject(error: unknown): void
}

/**
 * A turn's batcher: called, it answers with a promise; `into` hands the answer to `target`
 * instead, with no promise made (what a hot path reads on every request and mostly takes without a
 * wait: `target` keeps it).
 */
export interface TurnBatched<T, R> {
  (item: T): Promise<R>
  into(item: T, target: Settle<R>): void
}

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
): TurnBatched<T, R> {
  const schedule = defer === 'microtask' ? queueMicrotask : setImmediate
  let items: T[] = []
  let targets: Array<Settle<R>> = []
  const flush = async () => {
    const batch = items
    const settle = targets
    items = []
    targets = []
    try {
      const results = await run(batch)
      for (let i = 0; i < settle.length; i++) (settle[i] as Settle<R>).resolve(results[i] as R)
    } catch (error) {
      for (const target of settle) target.reject(error)
    }
  }
  const into = (item: T, target: Settle<R>) => {
    if (items.push(item) === 1) schedule(flush)
    targets.push(target)
  }
  const call = (item: T) => new Promise<R>((resolve, reject) => into(item, { resolve, reject }))
  return Object.assign(call, { into })
}
