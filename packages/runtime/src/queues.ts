import type { Queue } from 'bullmq'

/**
 * A BullMQ queue that is opened again when opening it failed. BullMQ opens a queue once, when it is
 * made: it waits for the connection, then reads the server's version. When Redis drops the
 * connection during that read, the queue stays broken for good, every call failing with that first
 * error, though the connection itself comes back. `get()` answers the queue once it is open; a
 * failed one is closed and the next `get()` makes a new one.
 */
export class ReopeningQueue<T = unknown> {
  readonly #open: () => Queue<T>
  #queue: Queue<T> | undefined

  constructor(open: () => Queue<T>) {
    this.#open = open
  }

  async get(): Promise<Queue<T>> {
    this.#queue ??= this.#open()
    const queue = this.#queue
    try {
      await queue.waitUntilReady()
      return queue
    } catch (error) {
      if (this.#queue === queue) this.#queue = undefined
      queue.close().catch(() => {})
      throw error
    }
  }

  async close(): Promise<void> {
    await this.#queue?.close()
  }
}
