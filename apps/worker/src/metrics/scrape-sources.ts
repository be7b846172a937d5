import type { SenderState } from '@dispatch/contracts'

/** A sender this process delivers for, as its lane holds it. */
export interface WatchedSender {
  senderId: string
  settings: { state: SenderState; ratePerSecond: number }
}

/** What the units of this process ask to be read at each scrape (`WorkerMetrics.watch…`). */
export interface ScrapeSources {
  /** Names of BullMQ queues whose job counts to export. */
  queues: Set<() => Iterable<string>>
  senders: Set<() => Iterable<WatchedSender>>
  outbox: boolean
}
