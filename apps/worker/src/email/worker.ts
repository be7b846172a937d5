import { EmailJob, QueueNames } from '@dispatch/contracts'
import { type Db, findEmailDelivery, recordEmailDelivery } from '@dispatch/db'
import type { RedisClient } from '@dispatch/runtime/redis'
import { type Job, type Telemetry, UnrecoverableError, Worker } from 'bullmq'
import type { Logger } from 'pino'
import Value from 'typebox/value'
import type { WorkerMetrics } from '../metrics/registry.ts'
import { traced } from '../tracing.ts'
import { renderEmail } from './templates.ts'
import type { Mailer } from './transport.ts'

export interface EmailProcessorDeps {
  db: Db
  mailer: Mailer
  logger: Logger
  /** Counts outcomes, when metrics are on. */
  metrics?: Pick<WorkerMetrics, 'email'> | undefined
}

/** SMTP 5xx answers (unknown mailbox, policy refusal) will not change on a retry. */
const isPermanent = (error: unknown) => {
  const code = (error as { responseCode?: number }).responseCode
  return typeof code === 'number' && code >= 500 && code < 600
}

/**
 * Sends one e-mail and records the outcome. An e-mail already recorded as sent is not sent again
 * (a job that runs twice after a crash); failures are recorded with their attempt count and
 * rethrown so BullMQ retries with backoff, except permanent ones.
 */
export async function sendEmailJob(job: Job<EmailJob>, { db, mailer, logger, metrics }: EmailProcessorDeps) {
  if (!Value.Check(EmailJob, job.data)) {
    throw new UnrecoverableError(
      `invalid e-mail job payload: ${[...Value.Errors(EmailJob, job.data)][0]?.message}`,
    )
  }
  const { outboxId, to, template } = job.data
  const id = Number(outboxId)
  if ((await findEmailDelivery(db, id))?.status === 'sent') return { skipped: true }

  const email = renderEmail(job.data)
  const attempts = job.attemptsMade + 1
  const base = { outboxId: id, recipient: to, template, subject: email.subject, attempts }
  try {
    const { messageId } = await traced('smtp send', { 'dispatch.email_template': job.data.template }, () =>
      mailer.send({ to, ...email, reference: `outbox-${outboxId}` }),
    )
    await recordEmailDelivery(db, {
      ...base,
      status: 'sent',
      lastError: null,
      providerMessageId: messageId,
      sentAt: new Date(),
    })
    metrics?.email('sent')
    logger.info({ outboxId, template, attempts }, 'e-mail sent')
    return { messageId }
  } catch (error) {
    const permanent = isPermanent(error)
    const final = permanent || attempts >= (job.opts.attempts ?? 1)
    const lastError = (error as Error).message.slice(0, 1000)
    await recordEmailDelivery(db, {
      ...base,
      status: final ? 'failed' : 'retrying',
      lastError,
      providerMessageId: null,
      sentAt: null,
    })
    metrics?.email(final ? 'failed' : 'retry')
    logger.warn({ outboxId, template, attempts, final, err: error }, 'e-mail not sent')
    throw permanent ? new UnrecoverableError(lastError) : error
  }
}

export function startEmailWorker(
  deps: EmailProcessorDeps & {
    connection: RedisClient
    prefix: string
    concurrency: number
    /** BullMQ's OpenTelemetry integration, when tracing is on. */
    telemetry?: Telemetry | undefined
  },
): Worker<EmailJob> {
  const worker = new Worker<EmailJob>(QueueNames.email, (job) => sendEmailJob(job, deps), {
    connection: deps.connection,
    prefix: deps.prefix,
    concurrency: deps.concurrency,
    ...(deps.telemetry ? { telemetry: deps.telemetry } : {}),
  })
  worker.on('error', (error) => deps.logger.error({ err: error }, 'e-mail worker error'))
  return worker
}
