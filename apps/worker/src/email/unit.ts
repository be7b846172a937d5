import { QueueNames } from '@dispatch/contracts'
import { queuePrefix } from '@dispatch/runtime'
import type { WorkerUnitStarter } from '../runtime.ts'
import { createMailer } from './transport.ts'
import { startEmailWorker } from './worker.ts'

/** The `email` role: sends the outbox's e-mails (key decisions, orders, alerts). */
export const startEmailUnit: WorkerUnitStarter = async ({
  config,
  db,
  logger,
  redis,
  metrics,
  telemetry,
}) => {
  const mailer = createMailer(config, logger)
  const worker = startEmailWorker({
    db,
    mailer,
    logger,
    connection: redis('email-worker', { blocking: true }),
    prefix: queuePrefix(config, QueueNames.email),
    concurrency: config.EMAIL_CONCURRENCY,
    metrics,
    telemetry,
  })
  metrics?.watchQueues(() => [QueueNames.email])
  logger.info(
    { concurrency: config.EMAIL_CONCURRENCY, smtp: Boolean(config.SMTP_URL) },
    'e-mail worker started',
  )
  return {
    close: async () => {
      await worker.close()
      mailer.close()
    },
  }
}
