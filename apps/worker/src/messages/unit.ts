import type { Sql } from '@dispatch/db'
import type { WorkerUnitStarter } from '../runtime.ts'
import { Admitter } from './admitter.ts'
import { startConsentConfirmationWorker } from './consent/confirmations.ts'
import { startSmsFallbackTimerWorker } from './fallback-timer.ts'
import { HeldExpirySweeper } from './held-expiry.ts'
import { SenderLanes } from './lanes.ts'
import { PoolMover } from './pool-mover.ts'
import { SenderRegistry } from './registry.ts'
import { SentLogSweeper } from './sent-log.ts'
import { AbandonedSmsCallSweeper } from './sms-call-sweep.ts'
import { SmsPriceSweeper } from './sms-price-sweep.ts'
import { StalledFallbackSweeper } from './stalled-fallback-sweep.ts'

/**
 * The `messages` role: for each sender this process serves (WORKER_SENDERS), a lane (its queue,
 * rate, pause and platform adapter), and the admitter that fills the lanes' queues fairly from the
 * senders' waiting messages. Senders come and go at run time through the registry. Keywords'
 * confirmations are sent here too. The role also runs the maintenance loops (lifecycle/unit.ts,
 * started beside this unit by index.ts).
 */
export const startMessagesUnit: WorkerUnitStarter = async (context) => {
  const lanes = new SenderLanes(context)
  await lanes.followingOptOuts()
  await lanes.followRevocations()
  const registry = new SenderRegistry(context, (senders, readAt) => lanes.reconcile(senders, readAt))
  await registry.start()
  // Its own connection, not the queues': see Admitter.
  const admitter = new Admitter(context, context.redis('senders-admission', { blocking: false }), () =>
    lanes.lanes(),
  )
  admitter.start()
  const sweeper = new HeldExpirySweeper(
    context,
    { redis: lanes.producer, ...lanes.recording, sms: lanes.fallback.sms },
    () => lanes.lanes(),
  )
  sweeper.start()
  // Messages waiting on a pool's number that fell move to a healthy member (docs/sender-pools.md).
  const poolMover = new PoolMover(context, lanes.producer, () => lanes.lanes())
  poolMover.start()
  // A bundle a worker holds on a number that fell hands it what it has not sent.
  lanes.watchRotation(poolMover)
  // Sent outcomes a process left in the senders' logs (killed, or Postgres was down) reach Postgres.
  const sentLogs = new SentLogSweeper(
    lanes.recording.claims,
    lanes.recording.recorder,
    () => [...lanes.lanes()].map((lane) => lane.sentLog),
    context.logger,
  )
  sentLogs.start()
  // SMS fallback calls a killed process left `calling` are recorded `unknown` (never called again).
  const smsCalls = new AbandonedSmsCallSweeper(
    context.db.$client as Sql,
    { smsTimeoutMs: context.config.SMS_TIMEOUT_MS },
    context.logger,
  )
  smsCalls.start()
  // The prices of the SMS whose delivery ended, from the provider (its reports carry none).
  const smsPrices = lanes.fallback.sms?.price
    ? new SmsPriceSweeper(
        context.db.$client as Sql,
        lanes.fallback.sms,
        { everyMs: context.config.SMS_PRICE_CHECK_MS },
        context.logger,
      )
    : undefined
  smsPrices?.start()
  // Jobs failed as stalled whose process died before handing their SMS fallback on: handed now.
  const stalledFallbacks = new StalledFallbackSweeper(
    {
      db: context.db,
      redis: lanes.producer,
      timers: lanes.fallback.timers,
      prefix: context.config.QUEUE_PREFIX,
      log: context.logger,
    },
    () => lanes.lanes(),
    { everyMs: context.config.SMS_STALLED_SWEEP_MS },
  )
  stalledFallbacks.start()
  // The "no `delivered` in time" timers of the fallback, as they come due.
  const smsTimers = startSmsFallbackTimerWorker(context, lanes.fallback.sms)
  // Keywords' confirmations, sent from the users' business numbers: this role has the platform's settings.
  const confirmations = startConsentConfirmationWorker(context)
  context.metrics?.watchSenders(() => lanes.lanes())
  context.metrics?.watchQueues(() => [...lanes.lanes()].map((lane) => lane.queueName))
  const { config, logger } = context
  logger.info(
    {
      platform: config.platform,
      senders: [...lanes.lanes()].map((lane) => lane.senderId),
      serves: config.workerSenders,
      concurrencyPerSender: config.MESSAGES_CONCURRENCY,
    },
    'messages worker started',
  )
  return {
    close: async () => {
      await registry.stop()
      await confirmations.close()
      await sweeper.stop()
      await poolMover.stop()
      await admitter.stop()
      await sentLogs.stop()
      await smsCalls.stop()
      await smsPrices?.stop()
      await stalledFallbacks.stop()
      await smsTimers.close()
      await lanes.close()
    },
  }
}
