import type { WorkerConfig } from '../env.ts'

/** `WORKER_SENDERS`: whether this process serves a sender (`*`: all), for delivery and the template sync. */
export const servesSender = (config: WorkerConfig, id: string) =>
  config.workerSenders === '*' || config.workerSenders.includes(id)
