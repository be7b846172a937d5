import { type ErasureReport, QueueNames } from '@dispatch/contracts'
import { queuePrefix } from '@dispatch/runtime'
import { type Job, Worker } from 'bullmq'
import type { WorkerUnitStarter } from '../runtime.ts'
import { RedisEraser } from './erase-redis.ts'
import { failErasure, runErasure } from './erasure.ts'
import { type KeyRevocationReport, runKeyRevocation } from './revocation.ts'

/**
 * How the relay adds an erasure's job. Removed once it ends, completed or failed for good: the job
 * is the one place the recipient is written in plain, and must not outlive the erasure. Retried
 * with backoff meanwhile (a database or Redis blip), every step being safe to run again.
 */
export const ERASURE_JOB_OPTIONS = {
  attempts: 5,
  backoff: { type: 'exponential' as const, delay: 5000 },
  removeOnComplete: true,
  removeOnFail: true,
}

/** How the relay adds a revoked key's sweep: retried with backoff (a database or Redis blip), each step safe to run again. */
export const REVOCATION_JOB_OPTIONS = {
  attempts: 10,
  backoff: { type: 'exponential' as const, delay: 2000 },
  removeOnComplete: { age: 7 * 24 * 3600 },
  removeOnFail: { age: 30 * 24 * 3600 },
}

/**
 * The `lifecycle` role: data-lifecycle jobs, a recipient's erasure (queue `erasures`) and a revoked
 * key's sweep of its messages (queue `key-revocations`). One at
 * a time per process: an erasure is a background sweep, never in a hurry, and kept off the
 * messages' connections and pool.
 */
export const startLifecycleUnit: WorkerUnitStarter = async (context) => {
  const { config, logger } = context
  const eraser = new RedisEraser(context, context.redis('lifecycle-eraser', { blocking: false }))
  const worker = new Worker<unknown, ErasureReport>(
    QueueNames.erasures,
    (job) => runErasure(context, eraser, job),
    {
      connection: context.redis('lifecycle-worker', { blocking: true }),
      prefix: queuePrefix(config, QueueNames.erasures),
      concurrency: 1,
    },
  )
  worker.on('error', (error) => logger.warn({ err: error }, 'lifecycle worker error'))
  worker.on('failed', (job, error) => {
    if (!job) return
    const final = job.attemptsMade >= (job.opts.attempts ?? 1) || error.name === 'UnrecoverableError'
    logger.error({ err: error, jobId: job.id, final }, 'erasure failed')
    if (final) {
      failErasure(context, job, error).catch((caught) =>
        logger.error({ err: caught, jobId: job.id }, 'failed erasure not recorded'),
      )
    }
  })
  // A revoked key's sweep (lifecycle/revocation.ts): on its own queue, beside the erasures.
  const announcer = context.redis('lifecycle-announcer', { blocking: false })
  const revocations = new Worker<unknown, KeyRevocationReport>(
    QueueNames.keyRevocations,
    (job: Job) => runKeyRevocation(context, eraser, announcer, job),
    {
      connection: context.redis('lifecycle-revocations', { blocking: true }),
      prefix: queuePrefix(config, QueueNames.keyRevocations),
      concurrency: 1,
    },
  )
  revocations.on('error', (error) => logger.warn({ err: error }, 'key revocation worker error'))
  revocations.on('failed', (job, error) =>
    logger.error({ err: error, jobId: job?.id }, 'revoked key sweep failed'),
  )
  logger.info('lifecycle worker started (erasures, key revocations)')
  return {
    close: async () => {
      await worker.close()
      await revocations.close()
      await eraser.close()
    },
  }
}
