import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { DEFAULT_SENDER_ID, type MessageJob, QueueNames } from '@dispatch/contracts'
import { createDb, findFallback, recordFallbackSent, type Sql } from '@dispatch/db'
import { fairKeys, MESSAGE_JOB_OPTIONS } from '@dispatch/runtime/message-handoff'
import { type FakeSms, freePort, graphError, startFakeSms, testRedisUrl, waitFor } from '@dispatch/testing'
import { Queue, QueueEvents, UnrecoverableError, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import pino from 'pino'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { STALLED_TOO_OFTEN } from '../../src/messages/delivery/fallback-triggers.ts'
import { StalledFallbackSweeper } from '../../src/messages/stalled-fallback-sweep.ts'
import { createDeliveryWorld, type DeliveryWorld, text } from './world.ts'

/**
 * A worker process killed with SIGKILL while the SMS provider holds its fallback call: the SMS is
 * never sent again, by the job retaken nor by anything else (docs/fallback.md, "At most once: the
 * record"). Killed before the decision, once or twice (the job then failed as stalled): the SMS goes
 * once, also when the worker that failed it died before handing the fallback on (the sweep).
 */
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url))

let world: DeliveryWorld
let sms: FakeSms
let redis: Redis
const children: ChildProcess[] = []
beforeAll(async () => {
  world = await createDeliveryWorld()
  sms = await startFakeSms()
  redis = new Redis(testRedisUrl())
})
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  redis?.disconnect()
  await sms?.close()
  await world?.close()
})

const smsEnv = () => ({
  ...sms.env(),
  // Short locks, so the killed worker's job is found stalled within a second or two.
  MESSAGES_LOCK_MS: '1000',
  MESSAGES_STALLED_INTERVAL_MS: '500',
})

it('SIGKILL during the SMS call: the retaken job sends nothing, and the SMS went at most once', async () => {
  const phone = '+4915112999001'
  // WhatsApp refuses the message; the provider takes the SMS request and answers only after a minute.
  world.fake.script(graphError(131026, 'Message undeliverable'))
  sms.script({ status: 201, body: { sid: 'SMlate', status: 'queued' }, delayMs: 60_000 })
  const messageId = await world.enqueue(
    { type: 'text', body: { ...text().body, phone } } as ReturnType<typeof text>,
    undefined,
    { fallback: { sms: { text: 'Your order has shipped' } } },
  )

  const worker = spawnWorker()
  await waitFor(() => sms.requests.some((r) => r.params.To === phone), {
    what: 'the SMS call under way',
    timeoutMs: 45_000,
  }).catch(async (error) => {
    throw new Error(
      `${error.message}; message ${JSON.stringify(await world.message(messageId))}; worker: ${worker.stderr()}`,
    )
  })
  await worker.kill()

  const client = createDb(dbUrl(), { max: 1 })
  try {
    expect(await findFallback(client.sql, messageId)).toMatchObject({ state: 'calling' })
    // Another worker retakes the stalled job: it finds the message recorded failed and stops.
    const second = await world.startWorker(smsEnv())
    await waitFor(() => jobDone(messageId), {
      what: 'the job retaken and finished',
      timeoutMs: 30_000,
    }).catch(async (error) => {
      const job = await world.queue.getJob(messageId)
      throw new Error(
        `${error.message}: ${job ? await job.getState() : 'gone'} ${second.logs.text().slice(-3000)}`,
      )
    })
    await second.close()
    expect(sms.requests.filter((r) => r.params.To === phone)).toHaveLength(1)
    expect(await findFallback(client.sql, messageId)).toMatchObject({ state: 'calling' })
    expect((await world.message(messageId))?.status).toBe('failed')
  } finally {
    await client.close()
  }
}, 90_000)

it('SIGKILL during the call of a "no delivered in time" timer: retaken, it sends nothing more', async () => {
  const phone = '+4915112999002'
  const messageId = await world.enqueue(
    { type: 'text', body: { ...text().body, phone } } as ReturnType<typeof text>,
    undefined,
    { fallback: { sms: { text: 'Your order has shipped' }, afterSeconds: 600 } },
  )
  const timers = new Queue(QueueNames.smsFallbackTimers, {
    connection: { url: testRedisUrl() },
    prefix: world.queuePrefix,
  })
  const events = new QueueEvents(QueueNames.smsFallbackTimers, {
    connection: { url: testRedisUrl() },
    prefix: world.queuePrefix,
  })
  await events.waitUntilReady()
  const worker = spawnWorker()
  const client = createDb(dbUrl(), { max: 1 })
  try {
    // WhatsApp took it; the timer is armed in Redis, due in ten minutes: run it now.
    const timer = await waitFor(async () => (await timers.getJob(messageId)) ?? false, {
      what: 'the timer armed',
      timeoutMs: 45_000,
    })
    await waitFor(async () => (await world.message(messageId))?.status === 'sent', { what: 'sent' })
    sms.script({ status: 201, body: { sid: 'SMlate2', status: 'queued' }, delayMs: 60_000 })
    await timer.promote()
    await waitFor(() => sms.requests.some((r) => r.params.To === phone), {
      what: 'the SMS call under way',
      timeoutMs: 30_000,
    })
    await worker.kill()
    expect(await findFallback(client.sql, messageId)).toMatchObject({
      state: 'calling',
      reason: 'not_delivered_in_time',
    })
    // Another worker retakes the stalled timer: `calling` is committed, so it calls nothing.
    const second = await world.startWorker(smsEnv())
    expect(await timer.waitUntilFinished(events, 30_000)).toBe('elsewhere')
    await second.close()
    expect(sms.requests.filter((r) => r.params.To === phone)).toHaveLength(1)
    expect(await findFallback(client.sql, messageId)).toMatchObject({ state: 'calling' })
  } finally {
    await events.close()
    await timers.close()
    await client.close()
  }
}, 120_000)

it('SIGKILL after 131026 is recorded failed, before the fallback is decided: the retaken job sends the SMS, once', async () => {
  const phone = '+4915112999003'
  const client = createDb(dbUrl(), { max: 2 })
  const messageId = await undeliverableKilledAtDecision(client, phone, 'SMrerun', 1)
  try {
    expect(await findFallback(client.sql, messageId)).toBeUndefined()
    expect(sms.requests.filter((r) => r.params.To === phone)).toHaveLength(0)
    // Another worker retakes the stalled job: it finds the message failed with 131026 and falls back.
    await retakenSendsOnce(client.sql, messageId, phone, 'SMrerun')
    expect((await world.message(messageId))?.status).toBe('failed')
    // WhatsApp was asked once: the retaken job found the failure recorded and did not try again.
    expect(world.fake.requests.filter((r) => r.messageId === messageId)).toHaveLength(1)
  } finally {
    await client.close()
  }
}, 120_000)

it('SIGKILL after the decision is committed, before `calling`: the retaken job sends the SMS, once', async () => {
  const phone = '+4915112999007'
  const messageId = randomUUID()
  const client = createDb(dbUrl(), { max: 2 })
  const holder = await client.sql.reserve()
  try {
    // The worker's step from `decided` to `calling` waits on a lock held here (a trigger of this
    // test's own database), so it dies with its decision committed and nobody calling.
    await client.sql.unsafe(`
      create function test_hold_calling() returns trigger language plpgsql as $$
      begin perform pg_advisory_xact_lock(4401); return new; end $$;
      create trigger test_hold_calling before update on message_fallbacks
        for each row when (new.state = 'calling') execute function test_hold_calling();`)
    await holder`select pg_advisory_lock(4401)`
    world.fake.script(graphError(131026, 'Message undeliverable'))
    sms.script({ status: 201, body: { sid: 'SMdecided', status: 'queued' } })
    await world.enqueue(
      { type: 'text', body: { ...text().body, phone } } as ReturnType<typeof text>,
      messageId,
      { fallback: { sms: { text: 'Your order has shipped' } } },
    )
    const worker = spawnWorker()
    const [waiting] = await waitFor(
      async () => {
        const rows = await client.sql<{ pid: number }[]>`select pid from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'advisory'`
        return rows.length > 0 ? rows : false
      },
      { what: 'the step to calling under way', timeoutMs: 45_000 },
    ).catch(async (error) => {
      throw new Error(
        `${error.message}; message ${JSON.stringify(await world.message(messageId))}; worker: ${worker.stderr()}`,
      )
    })
    expect(await findFallback(client.sql, messageId)).toMatchObject({ state: 'decided' })
    await worker.kill()
    const pid = waiting?.pid as number
    await client.sql`select pg_terminate_backend(${pid})`
    await waitFor(
      async () => (await client.sql`select 1 from pg_stat_activity where pid = ${pid}`).length === 0,
      {
        what: "the killed worker's backend ended",
      },
    )
    await client.sql.unsafe(
      'drop trigger test_hold_calling on message_fallbacks; drop function test_hold_calling()',
    )
    await holder`select pg_advisory_unlock(4401)`
    expect(await findFallback(client.sql, messageId)).toMatchObject({ state: 'decided' })
    expect(sms.requests.filter((r) => r.params.To === phone)).toHaveLength(0)

    // Another worker retakes the stalled job: the decision stands, nobody called, so it calls, once.
    await retakenSendsOnce(client.sql, messageId, phone, 'SMdecided')
    expect(world.fake.requests.filter((r) => r.messageId === messageId)).toHaveLength(1)
  } finally {
    await client.sql
      .unsafe(
        'drop trigger if exists test_hold_calling on message_fallbacks; drop function if exists test_hold_calling()',
      )
      .catch(() => {})
    holder.release()
    await client.close()
  }
}, 120_000)

it('SIGKILL twice between 131026 recorded failed and the decision: failed as stalled, a timer sends the SMS, once', async () => {
  const phone = '+4915112999004'
  const client = createDb(dbUrl(), { max: 2 })
  // The first run records the failure and dies deciding; the run that retakes it, stalled, too.
  const messageId = await undeliverableKilledAtDecision(client, phone, 'SMstalled', 2)
  try {
    expect(await findFallback(client.sql, messageId)).toBeUndefined()
    expect(sms.requests.filter((r) => r.params.To === phone)).toHaveLength(0)
    // Stalled twice, the job is failed by the next worker without running it: the fallback it never
    // decided goes to a timer, which finds the message failed with 131026 and sends the SMS.
    const healthy = await world.startWorker(smsEnv())
    await waitFor(async () => (await findFallback(client.sql, messageId))?.state === 'sent', {
      what: 'the SMS fallback sent',
      timeoutMs: 30_000,
    }).catch((error) => {
      throw new Error(`${error.message}: ${healthy.logs.text().slice(-3000)}`)
    })
    expect((await world.queue.getJob(messageId))?.failedReason).toBe(STALLED_TOO_OFTEN)
    await healthy.close()
    expect(sms.requests.filter((r) => r.params.To === phone)).toHaveLength(1)
    expect(await findFallback(client.sql, messageId)).toMatchObject({
      state: 'sent',
      reason: 'whatsapp_undeliverable',
      providerMessageId: 'SMstalled',
    })
    expect((await world.message(messageId))?.status).toBe('failed')
    expect(world.fake.requests.filter((r) => r.messageId === messageId)).toHaveLength(1)
  } finally {
    await client.close()
  }
}, 150_000)

it('a fallback sent before its job was failed as stalled: the timer it is handed to sends nothing more', async () => {
  const phone = '+4915112999005'
  world.fake.script(graphError(131026, 'Message undeliverable'))
  // The provider takes the SMS request and answers only after a minute: its worker dies meanwhile.
  sms.script({ status: 201, body: { sid: 'SMbefore', status: 'queued' }, delayMs: 60_000 })
  const messageId = await world.enqueue(
    { type: 'text', body: { ...text().body, phone } } as ReturnType<typeof text>,
    undefined,
    { fallback: { sms: { text: 'Your order has shipped' } } },
  )
  const events = new QueueEvents(QueueNames.smsFallbackTimers, {
    connection: { url: testRedisUrl() },
    prefix: world.queuePrefix,
  })
  await events.waitUntilReady()
  const client = createDb(dbUrl(), { max: 2 })
  try {
    const first = spawnWorker()
    await waitFor(() => sms.requests.some((r) => r.params.To === phone), {
      what: 'the SMS call under way',
      timeoutMs: 45_000,
    }).catch((error) => {
      throw new Error(`${error.message}; worker: ${first.stderr()}`)
    })
    await first.kill()
    // The provider's answer recorded, as the run would have had it lived: the fallback is sent.
    const sent = { messageId, provider: 'twilio', providerMessageId: 'SMbefore', providerStatus: 'queued' }
    expect(await recordFallbackSent(client.sql, { ...sent, at: new Date() })).toBe(true)
    // The run that retakes it waits at the decision on the message's row, held here, and dies there.
    const holder = await client.sql.reserve()
    try {
      await holder`begin`
      await holder`select 1 from messages where id = ${messageId} for update`
      await killAtDecision(client.sql, messageId, spawnWorker())
      await holder`rollback`
    } finally {
      holder.release()
    }
    // Failed as stalled, its fallback is handed to a timer, which finds it sent and calls nothing.
    const ran = timerOutcome(events, messageId)
    const healthy = await world.startWorker(smsEnv())
    expect(await ran).toBe('elsewhere')
    expect((await world.queue.getJob(messageId))?.failedReason).toBe(STALLED_TOO_OFTEN)
    await healthy.close()
    expect(sms.requests.filter((r) => r.params.To === phone)).toHaveLength(1)
    expect(await findFallback(client.sql, messageId)).toMatchObject({
      state: 'sent',
      providerMessageId: 'SMbefore',
    })
  } finally {
    await events.close()
    await client.close()
  }
}, 150_000)

it('failed as stalled by a worker killed before its hand-off: the sweep sends the SMS once, and nothing when run again', async () => {
  const phone = '+4915112999008'
  const client = createDb(dbUrl(), { max: 2 })
  const messageId = await undeliverableKilledAtDecision(client, phone, 'SMswept', 2)
  const events = new QueueEvents(QueueNames.smsFallbackTimers, {
    connection: { url: testRedisUrl() },
    prefix: world.queuePrefix,
  })
  await events.waitUntilReady()
  try {
    // BullMQ fails it as stalled, and nothing hands its fallback on (that worker died right then).
    await failAsStalledWithoutHandOff(messageId)
    expect(await findFallback(client.sql, messageId)).toBeUndefined()
    expect(sms.requests.filter((r) => r.params.To === phone)).toHaveLength(0)

    // Postgres away: a pass hands nothing on, and leaves the job to the next one.
    const runNow = vi.fn(async () => true)
    const away = createDb(`postgres://postgres@127.0.0.1:${await freePort()}/postgres`, { max: 1 })
    try {
      const sweeper = new StalledFallbackSweeper(
        {
          db: away.db,
          redis,
          timers: { runNow },
          prefix: world.queuePrefix,
          log: pino({ level: 'silent' }),
        },
        () => [{ senderId: DEFAULT_SENDER_ID, queue: { get: async () => world.queue } }],
        { everyMs: 60_000 },
      )
      await expect(sweeper.sweep(Date.now() + 60_000)).rejects.toThrow()
      expect(runNow).not.toHaveBeenCalled()
      expect(await sweptPast(messageId)).toBe(false)
    } finally {
      await away.close()
    }

    // A worker starting sweeps the failed jobs: the fallback goes to a timer, which sends it.
    const healthy = await world.startWorker({ ...smsEnv(), SMS_STALLED_SWEEP_MS: '500' })
    await waitFor(async () => (await findFallback(client.sql, messageId))?.state === 'sent', {
      what: 'the SMS fallback sent',
      timeoutMs: 45_000,
    }).catch((error) => {
      throw new Error(`${error.message}: ${healthy.logs.text().slice(-3000)}`)
    })
    expect(healthy.logs.text()).toContain('its sms fallback handed to a timer by the sweep')
    await waitFor(() => sweptPast(messageId), { what: 'the sweep past the job' })
    // The sweep again, reading the failed jobs from the start: handed on once more, it sends nothing.
    const ranAgain = timerOutcome(events, messageId)
    await redis.del(fairKeys(world.queuePrefix, DEFAULT_SENDER_ID).stalledSwept)
    expect(await ranAgain).toBe('elsewhere')
    await new Promise((resolve) => setTimeout(resolve, 1500))
    await healthy.close()
    expect(sms.requests.filter((r) => r.params.To === phone)).toHaveLength(1)
    expect(await findFallback(client.sql, messageId)).toMatchObject({
      state: 'sent',
      reason: 'whatsapp_undeliverable',
      providerMessageId: 'SMswept',
    })
    expect((await world.queue.getJob(messageId))?.failedReason).toBe(STALLED_TOO_OFTEN)
    expect(world.fake.requests.filter((r) => r.messageId === messageId)).toHaveLength(1)
  } finally {
    await events.close()
    await client.close()
  }
}, 180_000)

it('failed as stalled after WhatsApp took the message (no 131026): the sweep hands nothing on, no SMS', async () => {
  const phone = '+4915112999009'
  const client = createDb(dbUrl(), { max: 2 })
  const timers = new Queue(QueueNames.smsFallbackTimers, {
    connection: { url: testRedisUrl() },
    prefix: world.queuePrefix,
  })
  try {
    const message = { type: 'text', body: { ...text().body, phone } } as ReturnType<typeof text>
    const data: MessageJob = {
      messageId: randomUUID(),
      apiKeyId: world.apiKeyId,
      acceptedAt: new Date().toISOString(),
      message,
      fallback: { sms: { text: 'Your order has shipped' } },
    }
    const { messageId } = data
    const first = await world.startWorker(smsEnv())
    await world.enqueue(message, messageId, data)
    await waitFor(async () => (await world.message(messageId))?.status === 'sent', { what: 'sent' })
    await first.close()
    // Its job again, failed as stalled (as after two kills past the send) by BullMQ alone.
    await world.queue.add(message.type, data, { ...MESSAGE_JOB_OPTIONS, jobId: messageId })
    await redis.hset(world.queue.toKey(messageId), 'defa', STALLED_TOO_OFTEN)
    await failAsStalledWithoutHandOff(messageId)

    const healthy = await world.startWorker({ ...smsEnv(), SMS_STALLED_SWEEP_MS: '500' })
    await waitFor(() => sweptPast(messageId), { what: 'the sweep past the job', timeoutMs: 45_000 })
    await healthy.close()
    expect(await timers.getJob(messageId)).toBeUndefined()
    expect(await findFallback(client.sql, messageId)).toBeUndefined()
    expect(sms.requests.filter((r) => r.params.To === phone)).toHaveLength(0)
    // Its SMS stays with its sent record, for a 131026 WhatsApp may still report.
    expect(await world.message(messageId)).toMatchObject({
      status: 'sent',
      sms_fallback_text: 'Your order has shipped',
    })
  } finally {
    await timers.close()
    await client.close()
  }
}, 120_000)

/**
 * BullMQ alone, without the service's `failed` listener, as a worker killed right after BullMQ failed
 * the job: a job stalled once more (or marked so) is failed as stalled and nothing is handed on.
 */
async function failAsStalledWithoutHandOff(messageId: string): Promise<void> {
  const bare = new Worker(
    QueueNames.messages,
    async () => {
      throw new UnrecoverableError('not to be run here')
    },
    {
      connection: { url: testRedisUrl() },
      prefix: world.queuePrefix,
      lockDuration: 1000,
      stalledInterval: 500,
      maxStalledCount: 1,
    },
  )
  bare.on('error', () => {})
  try {
    await waitFor(async () => (await world.queue.getJob(messageId))?.failedReason === STALLED_TOO_OFTEN, {
      what: 'the job failed as stalled',
      timeoutMs: 30_000,
    })
  } finally {
    await bare.close()
  }
}

/** Whether the sweep of the default sender's failed jobs has read past the message's job. */
async function sweptPast(messageId: string): Promise<boolean> {
  const job = await world.queue.getJob(messageId)
  const cursor = await redis.get(fairKeys(world.queuePrefix, DEFAULT_SENDER_ID).stalledSwept)
  return cursor !== null && Number(cursor.split(':')[0]) >= (job?.finishedOn ?? Number.POSITIVE_INFINITY)
}

/**
 * A text with an SMS fallback that WhatsApp refuses with 131026 (the provider to answer `sid`),
 * whose worker records it `failed` and is killed while deciding its fallback, `kills` times over
 * (each retaking run waits at the decision on a row held here, and dies there). Answers its id.
 */
async function undeliverableKilledAtDecision(
  client: ReturnType<typeof createDb>,
  phone: string,
  sid: string,
  kills: number,
): Promise<string> {
  const messageId = randomUUID()
  world.fake.script(graphError(131026, 'Message undeliverable'))
  sms.script({ status: 201, body: { sid, status: 'queued' } })
  const holder = await client.sql.reserve()
  try {
    await holdDecision(holder, messageId)
    await world.enqueue(
      { type: 'text', body: { ...text().body, phone } } as ReturnType<typeof text>,
      messageId,
      { fallback: { sms: { text: 'Your order has shipped' } } },
    )
    for (let n = 0; n < kills; n++) await killAtDecision(client.sql, messageId, spawnWorker())
    await holder`rollback`
  } finally {
    holder.release()
  }
  return messageId
}

/** A worker process of this world, its stderr kept for a failure's message. */
function spawnWorker() {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, ...world.workerEnv(smsEnv()), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  children.push(child)
  let stderr = ''
  child.stderr?.on('data', (chunk) => (stderr += chunk))
  const exited = new Promise((resolve) => child.once('exit', resolve))
  return {
    stderr: () => stderr,
    async kill() {
      child.kill('SIGKILL')
      await exited
    },
  }
}

/**
 * Holds a worker at its fallback's decision: an uncommitted row of the message's fallback, which its
 * insert waits on, so a process killed there dies with `failed` committed and nothing decided.
 */
async function holdDecision(holder: Sql, messageId: string): Promise<void> {
  await holder`begin`
  await holder`insert into message_fallbacks
    (message_id, accepted_at, api_key_id, reason, state, decided_at, updated_at)
    values (${messageId}, now(), ${randomUUID()}, 'whatsapp_undeliverable', 'decided', now(), now())`
}

/**
 * Waits until the worker's decision waits on a lock the test holds, the message recorded failed,
 * then kills the worker. Its backend ends too, so the dead process's insert never commits.
 */
async function killAtDecision(
  sql: Sql,
  messageId: string,
  worker: ReturnType<typeof spawnWorker>,
): Promise<void> {
  const [waiting] = await waitFor(
    async () => {
      const rows = await sql<{ pid: number }[]>`select pid from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'
          and query like '%insert into message_fallbacks%'`
      return rows.length > 0 ? rows : false
    },
    { what: 'the fallback decision under way', timeoutMs: 45_000 },
  ).catch(async (error) => {
    throw new Error(
      `${error.message}; message ${JSON.stringify(await world.message(messageId))}; worker: ${worker.stderr()}`,
    )
  })
  expect((await world.message(messageId))?.status).toBe('failed')
  await worker.kill()
  const pid = waiting?.pid as number
  await sql`select pg_terminate_backend(${pid})`
  // Gone before anything looks for the next run's decision, which must not find this one.
  await waitFor(async () => (await sql`select 1 from pg_stat_activity where pid = ${pid}`).length === 0, {
    what: "the killed worker's backend ended",
  })
}

/** What the message's fallback timer returned, once a worker ran it. */
function timerOutcome(events: QueueEvents, messageId: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timeout = setTimeout(() => {
      events.off('completed', done)
      reject(new Error('timed out after 30000 ms waiting for the fallback timer'))
    }, 30_000)
    const done = ({ jobId, returnvalue }: { jobId: string; returnvalue: unknown }) => {
      if (jobId !== messageId) return
      clearTimeout(timeout)
      events.off('completed', done)
      resolve(returnvalue)
    }
    events.on('completed', done)
  })
}

/** The world's database URL, as its workers get it. */
const dbUrl = () => world.workerEnv().DATABASE_URL as string

/**
 * Starts another worker, which retakes the stalled job, and waits for it to finish: one SMS to
 * `phone` in all, the message's fallback recorded sent with the provider's `sid`.
 */
async function retakenSendsOnce(sql: Sql, messageId: string, phone: string, sid: string): Promise<void> {
  const second = await world.startWorker(smsEnv())
  await waitFor(() => jobDone(messageId), {
    what: 'the job retaken and finished',
    timeoutMs: 30_000,
  }).catch((error) => {
    throw new Error(`${error.message}: ${second.logs.text().slice(-3000)}`)
  })
  await second.close()
  expect(sms.requests.filter((r) => r.params.To === phone)).toHaveLength(1)
  expect(await findFallback(sql, messageId)).toMatchObject({
    state: 'sent',
    reason: 'whatsapp_undeliverable',
    providerMessageId: sid,
  })
}

/** Whether the message's job is finished: completed (and removed), or failed (kept for inspection). */
async function jobDone(messageId: string): Promise<boolean> {
  const job = await world.queue.getJob(messageId)
  if (job === undefined) return true
  const state = await job.getState()
  return state === 'completed' || state === 'failed'
}
