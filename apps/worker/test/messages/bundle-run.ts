import type { MessageJob } from '@dispatch/contracts'
import { createDb } from '@dispatch/db'
import { recipientHasher } from '@dispatch/runtime'
import {
  fairKeys,
  type MessageBundleJob,
  type MessageBundleResult,
  messageBundleJobId,
} from '@dispatch/runtime/message-handoff'
import { testRedisUrl } from '@dispatch/testing'
import type { Job } from 'bullmq'
import { Redis } from 'ioredis'
import pino from 'pino'
import { deliverBundle } from '../../src/messages/bundle.ts'
import { DeliveryRecorder } from '../../src/messages/delivery-recorder.ts'
import { createWhatsAppCloudPlatform } from '../../src/platforms/whatsapp-cloud.ts'
import { Permits } from '../../src/shared/permits.ts'
import { ACCESS_TOKEN, type DeliveryWorld, PHONE_NUMBER_ID } from './world.ts'

/**
 * One run of a bundle of the default sender as BullMQ hands it out (its `attemptsStarted` says
 * which: 2 is a stalled bundle retaken), with the deps a lane gives it, outside any worker; settles
 * once the bundle ended and its outcomes are recorded. `claimKeepMs` has the recorder release the
 * claims that long after each record, as the worker does.
 */
export async function runBundle(
  world: DeliveryWorld,
  messages: MessageJob[],
  run: { attemptsStarted: number; id?: string; claimKeepMs?: number },
): Promise<void> {
  const redis = new Redis(testRedisUrl(), { enableAutoPipelining: true })
  const { db, close } = createDb(world.workerEnv().DATABASE_URL)
  const keys = fairKeys(world.queuePrefix, 'default')
  const recorder = new DeliveryRecorder(world.sql, {
    redis,
    ...(run.claimKeepMs === undefined
      ? {}
      : { claims: { prefix: world.queuePrefix, keepMs: run.claimKeepMs } }),
  })
  const deps = {
    db,
    claims: redis,
    logger: pino({ level: 'silent' }),
    prefix: world.queuePrefix,
    hash: recipientHasher({}),
    recorder,
    sentLog: { stream: keys.sentLog, redis },
    queue: async () => world.queue,
    permits: new Permits(4),
    index: { redis, key: keys.bundled },
    backoffMs: 20,
  }
  const lane = {
    senderId: 'default',
    platform: createWhatsAppCloudPlatform({
      apiUrl: world.fake.url,
      accessToken: ACCESS_TOKEN,
      phoneNumberId: PHONE_NUMBER_ID,
      timeoutMs: 5000,
    }),
    settings: { serviceWindowPolicy: 'off' as const },
    rateLimit: async () => ({ pauseMs: 0, newPause: false }),
    limitedUntil: 0,
    holdForLimit: async () => false,
    spendPace: async () => {},
    tokenRefused: async () => {},
  }
  const job = {
    id: run.id ?? messageBundleJobId(crypto.randomUUID()),
    data: { messages },
    attemptsMade: 0,
    attemptsStarted: run.attemptsStarted,
    progress: 0,
    updateProgress: async () => {},
  } as unknown as Job<MessageBundleJob, MessageBundleResult>
  try {
    await deliverBundle(job, lane, deps)
    await recorder.drain()
  } finally {
    redis.disconnect()
    await close()
  }
}
