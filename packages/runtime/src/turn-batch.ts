/**
 * Gathers the calls made in one turn of the event loop and runs them together at its end: under
 * load, one Redis command for many requests, and a lone request waits only for the current turn.
 * `run` answers each item in order; when it throws, every call of the turn rejects with its error.
 */
export function turnBatched<T, R>(run: (items: T[]) => Promise<R[]>): (item: T) => Promise<R> {
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
      if (pending.push({ item, resolve, reject }) === 1) setImmediate(flush)
    })
}
