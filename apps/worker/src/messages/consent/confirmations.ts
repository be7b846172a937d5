import { ConsentConfirmationJob, DEFAULT_SENDER_ID, QueueNames } from '@dispatch/contracts'
import { findSender } from '@dispatch/db'
import { createSecretBox, queuePrefix } from '@dispatch/runtime'
import { type Job, UnrecoverableError, Worker } from 'bullmq'
import { Compile } from 'typebox/compile'
import { type MessagingPlatform, PlatformError } from '../../platforms/types.ts'
import type { WorkerContext } from '../../runtime.ts'
import { createSenderPlatform } from '../lanes.ts'
import { adminSender, defaultSender } from '../registry.ts'

const isConfirmationJob = Compile(ConsentConfirmationJob)
const CONCURRENCY = 5

type Deps = Pick<WorkerContext, 'config' | 'db' | 'logger' | 'addSecret'>

/**
 * The sender's number as it is now, with its token: the environment's for `default`, the sealed one
 * of an admin's sender. A sender removed, or moved to another number, since the keyword: nothing to
 * send it from (undefined).
 */
async function platformOf(deps: Deps, data: ConsentConfirmationJob): Promise<MessagingPlatform | undefined> {
  const { config, db } = deps
  if (data.senderId === DEFAULT_SENDER_ID) {
    const settings = defaultSender(config)
    return settings.phoneNumberId === data.phoneNumberId ? createSenderPlatform(config, settings) : undefined
  }
  const row = await findSender(db, data.senderId)
  if (!row || row.phoneNumberId !== data.phoneNumberId) return undefined
  // A token this process cannot open (SECRETS_KEY) throws: retried, as its messages wait.
  const accessToken = row.accessTokenCiphertext
    ? createSecretBox(config).open(row.accessTokenCiphertext)
    : undefined
  if (accessToken) deps.addSecret(accessToken)
  return createSenderPlatform(config, adminSender(row, accessToken))
}

/**
 * Sends a keyword's confirmation back to the user, as free text from the number they wrote to (the
 * 24-hour window is open: they just wrote). It goes around the suppression list by design: an opt-out
 * of everything blocks every message but this one. Not a message of any API key, so it has no
 * `messages` row: a log line and this job (the queue dashboard) record it. A refusal the platform
 * would repeat fails the job at once; anything else is retried within the job's attempts.
 */
export async function sendConsentConfirmation(job: Job<ConsentConfirmationJob>, deps: Deps) {
  if (!isConfirmationJob.Check(job.data)) {
    throw new UnrecoverableError('The job payload does not match the consent confirmation contract')
  }
  const { outboxId, senderId, intent, phone, userId, text } = job.data
  const log = deps.logger.child({ outboxId, senderId, intent })
  const platform = await platformOf(deps, job.data)
  if (!platform) {
    log.warn('consent confirmation not sent: its sender is gone or has another number now')
    throw new UnrecoverableError('The sender is gone or has another number now')
  }
  const attempts = job.attemptsMade + 1
  try {
    const { platformMessageId } = await platform.deliver({
      messageId: `consent-${outboxId}`,
      message: { type: 'text', body: { ...(phone === undefined ? { userId } : { phone }), text } },
    })
    log.info({ platformMessageId, attempts }, 'consent confirmation sent')
    return { platformMessageId }
  } catch (error) {
    const permanent = error instanceof PlatformError && error.kind === 'permanent'
    const final = permanent || attempts >= (job.opts.attempts ?? 1)
    const code = error instanceof PlatformError ? error.code : 'INTERNAL'
    log.warn({ code, attempts, final, err: error }, 'consent confirmation not sent')
    throw permanent ? new UnrecoverableError(`${code}: ${(error as Error).message}`) : error
  }
}

/** The consumer of the confirmations queue, in the `messages` role: the one that holds the platform's settings. */
export function startConsentConfirmationWorker(context: WorkerContext): Worker<ConsentConfirmationJob> {
  const { config, logger, telemetry } = context
  const name = QueueNames.consentConfirmations
  const worker = new Worker<ConsentConfirmationJob>(name, (job) => sendConsentConfirmation(job, context), {
    connection: context.redis('consent-confirmations', { blocking: true }),
    prefix: queuePrefix(config, name),
    concurrency: CONCURRENCY,
    ...(telemetry ? { telemetry } : {}),
  })
  worker.on('error', (error) => logger.error({ err: error }, 'consent confirmation worker error'))
  return worker
}
