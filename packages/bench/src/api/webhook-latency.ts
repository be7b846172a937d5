/**
 * Webhook latency benchmark: a WhatsApp status webhook (`delivered`) POSTed to the API until the
 * sender's receiver gets `message.delivered`, per message, at a steady rate. The path measured is
 * the whole one: the API applies the status (the trigger writes the event and its outbox row, then
 * NOTIFY), the outbox relay turns it into a `webhooks` job, the webhooks worker signs and posts it.
 *
 * The API and the worker (outbox and webhooks roles) each run in a child process
 * (webhook-latency-services.ts), as they are deployed; this process plays Meta (the load) and the
 * sender's receiver, so both ends of each latency are read on one clock.
 *
 * The endpoint's limits are raised above the offered rate (50 at once, 1,000/s) so the path is what
 * is measured; WEBHOOK_ENDPOINT_CONCURRENCY and WEBHOOK_ENDPOINT_RATE_PER_SECOND set them (the
 * service's defaults are 20 and 1,000/s; docs/webhooks.md, "Delivery, retries and disabling", says
 * why the rate must stay well above an endpoint's steady load).
 *
 *   pnpm --filter @dispatch/bench bench:webhook-latency   (BENCH_RATE, BENCH_DURATION_S, BENCH_WARMUP_S)
 */
import { randomBytes } from 'node:crypto'
import { Agent, createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createDb, generateApiKey, insertApiKey, insertWebhookEndpoint } from '@dispatch/db'
import { signWebhook as signMetaWebhook, statusWebhook } from '@dispatch/testing'
import { Webhook } from 'standardwebhooks'
import { printFigure } from '../harness/report.ts'
import { createBenchWorld } from '../harness/world.ts'
import { APP_SECRET, startServices } from './webhook-latency-services.ts'

const rate = Number(process.env.BENCH_RATE ?? 200)
const duration = Number(process.env.BENCH_DURATION_S ?? 25)
const warmUp = Number(process.env.BENCH_WARMUP_S ?? 3)
/** How long the last events may take to arrive before the rest are counted as missing. */
const GRACE_MS = 10_000
const endpointLimits = {
  WEBHOOK_ENDPOINT_CONCURRENCY: process.env.WEBHOOK_ENDPOINT_CONCURRENCY ?? '50',
  WEBHOOK_ENDPOINT_RATE_PER_SECOND: process.env.WEBHOOK_ENDPOINT_RATE_PER_SECOND ?? '1000',
}

/** The value below which `share` of the sorted values lie (nearest rank). */
const percentile = (sorted: number[], share: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))] ?? Number.NaN

const ms = (value: number) => `${value.toFixed(1)} ms`

/**
 * Where each message's time went, from the timestamps the path leaves behind: the event row's
 * (the API's transaction), the outbox row's relay time, the first attempt's (the worker, right
 * before signing and posting). One machine, one clock; this process's times are made epoch ms.
 */
async function printStages(
  sql: ReturnType<typeof createDb>['sql'],
  messages: Array<{ id: string }>,
  postedAt: Map<string, number>,
  arrivedAt: Map<string, number>,
) {
  const rows = await sql<Array<{ messageId: string; event: number; relayed: number; tried: number }>>`
    select e.message_id as "messageId",
      extract(epoch from e.created_at)::float8 * 1000 as event,
      extract(epoch from o.dispatched_at)::float8 * 1000 as relayed,
      extract(epoch from a.created_at)::float8 * 1000 as tried
    from webhook_events e
    join outbox o on o.payload ->> 'eventId' = e.id
    join webhook_attempts a on a.event_id = e.id and a.attempt = 1
    where e.type = 'message.delivered'`
  const byMessage = new Map(rows.map((row) => [row.messageId, row]))
  const stages = { api: [] as number[], relay: [] as number[], queue: [] as number[], post: [] as number[] }
  for (const { id } of messages) {
    const row = byMessage.get(id)
    const posted = postedAt.get(id)
    const arrived = arrivedAt.get(id)
    if (!row || posted === undefined || arrived === undefined) continue
    stages.api.push(row.event - (performance.timeOrigin + posted))
    stages.relay.push(row.relayed - row.event)
    stages.queue.push(row.tried - row.relayed)
    stages.post.push(performance.timeOrigin + arrived - row.tried)
  }
  const line = (values: number[]) => {
    values.sort((a, b) => a - b)
    return `p50 ${ms(percentile(values, 0.5))}, p99 ${ms(percentile(values, 0.99))}`
  }
  console.log(`  status POST → event written (API): ${line(stages.api)}`)
  console.log(`  event → job queued (commit, NOTIFY, outbox relay): ${line(stages.relay)}`)
  console.log(`  job queued → worker's try (BullMQ, endpoint, gate): ${line(stages.queue)}`)
  console.log(`  try → receiver (sign, POST): ${line(stages.post)}`)
}

async function main() {
  const world = await createBenchWorld('webhook_latency')
  const { db, sql, close: closeDb } = createDb(world.databaseUrl)
  let services: Awaited<ReturnType<typeof startServices>> | undefined
  const receiver = createServer()
  const agent = new Agent({ keepAlive: true })
  try {
    const total = Math.round(rate * (warmUp + duration))
    const { keyHash, keyPrefix } = generateApiKey('development')
    const key = await insertApiKey(db, {
      keyHash,
      keyPrefix,
      environment: 'development',
      clientName: 'Bench',
      email: 'bench@dispatch.test',
      scopes: ['send:free-text', 'manage:webhooks'],
      requestedTenantId: null,
      createdAt: new Date(),
    })
    // Messages already sent, as the worker records them. Inserted before the key has an endpoint,
    // so their own `message.sent` events are not emitted: only the measured `delivered` ones are.
    const messages = await sql<Array<{ id: string; wamid: string }>>`
      insert into messages (id, api_key_id, type, phone, payload, sender_phone_number_id, status,
        attempts, platform_message_id, accepted_at, sent_at)
      select gen_random_uuid(), ${key.id}, 'text', '+5511987654321',
        '{"phone": "+5511987654321", "text": "Your code is 123456"}'::jsonb, '106540352242922', 'sent',
        1, 'wamid.BENCH' || lpad(g::text, 8, '0'), now(), now()
      from generate_series(1, ${total}) g
      order by g
      returning id, platform_message_id as wamid`

    // The sender's receiver: notes when each message's event arrives and verifies a sample.
    const arrivedAt = new Map<string, number>()
    let verified = 0
    let bad = 0
    let verifier: Webhook | undefined
    receiver.on('request', (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        const at = performance.now()
        res.writeHead(204).end()
        const body = Buffer.concat(chunks).toString('utf8')
        const event = JSON.parse(body) as { type: string; data: { messageId: string } }
        if (event.type === 'message.delivered' && !arrivedAt.has(event.data.messageId)) {
          arrivedAt.set(event.data.messageId, at)
        }
        if (arrivedAt.size % 100 === 1) {
          try {
            verifier?.verify(body, req.headers as Record<string, string>)
            verified++
          } catch {
            bad++
          }
        }
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/dispatch`
    const endpoint = await insertWebhookEndpoint(db, {
      apiKeyId: key.id,
      url: receiverUrl,
      events: ['message.delivered'],
      description: null,
      secret: `whsec_${randomBytes(32).toString('base64')}`,
      now: new Date(),
    })
    verifier = new Webhook(endpoint.secret)

    services = await startServices({
      databaseUrl: world.databaseUrl,
      redisUrl: world.redisUrl,
      queuePrefix: world.queuePrefix,
      extra: endpointLimits,
    })
    const statusUrl = `${services.apiUrl}/api/webhooks/whatsapp`

    // Meta's side: one signed status per POST, sent on schedule whether or not earlier ones answered.
    const postedAt = new Map<string, number>()
    const answerMs: number[] = []
    let failedPosts = 0
    const postStatus = (message: { id: string; wamid: string }, measured: boolean) => {
      const body = JSON.stringify(
        statusWebhook({
          id: message.wamid,
          status: 'delivered',
          timestamp: String(Math.floor(Date.now() / 1000)),
          recipient_id: '5511987654321',
        }),
      )
      const started = performance.now()
      postedAt.set(message.id, started)
      const req = request(statusUrl, {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'x-hub-signature-256': signMetaWebhook(body, APP_SECRET),
        },
      })
      req.on('error', () => failedPosts++)
      req.on('response', (res) => {
        if (res.statusCode !== 200) failedPosts++
        res.resume()
        res.on('end', () => measured && answerMs.push(performance.now() - started))
      })
      req.end(body)
    }

    console.log(
      `webhook latency: ${rate} status webhooks/s for ${duration} s after a ${warmUp} s warm-up; ` +
        'API and worker (outbox, webhooks) in child processes; endpoint limits ' +
        `${endpointLimits.WEBHOOK_ENDPOINT_CONCURRENCY} at once, ${endpointLimits.WEBHOOK_ENDPOINT_RATE_PER_SECOND}/s`,
    )
    const warmCount = Math.round(rate * warmUp)
    const began = performance.now()
    let sent = 0
    let reported = 0
    await new Promise<void>((resolve) => {
      const tick = () => {
        const elapsed = (performance.now() - began) / 1000
        // Every message due by now goes out, so a late timer never lowers the rate.
        const due = Math.min(total, Math.floor(elapsed * rate) + 1)
        for (; sent < due; sent++)
          postStatus(messages[sent] as { id: string; wamid: string }, sent >= warmCount)
        if (sent === total) return resolve()
        if (elapsed >= reported + 5) {
          reported += 5
          console.log(`  ${reported} s: ${sent} posted, ${arrivedAt.size} delivered to the receiver`)
        }
        setTimeout(tick, 1)
      }
      tick()
    })
    const deadline = performance.now() + GRACE_MS
    while (arrivedAt.size < total && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }

    const latencies: number[] = []
    for (const message of messages.slice(warmCount)) {
      const arrived = arrivedAt.get(message.id)
      const posted = postedAt.get(message.id)
      if (arrived !== undefined && posted !== undefined) latencies.push(arrived - posted)
    }
    latencies.sort((a, b) => a - b)
    answerMs.sort((a, b) => a - b)
    const measured = total - warmCount
    if (failedPosts > 0 || bad > 0 || verified === 0) {
      throw new Error(`${failedPosts} status posts failed; ${verified} signatures verified, ${bad} bad`)
    }
    console.log(
      `  status POST answered (the API's share): p50 ${ms(percentile(answerMs, 0.5))}, ` +
        `p99 ${ms(percentile(answerMs, 0.99))}`,
    )
    await printStages(sql, messages.slice(warmCount), postedAt, arrivedAt)
    const p99 = percentile(latencies, 0.99)
    console.log(
      `webhook latency (status in → receiver called) at ${rate}/s: p50 ${ms(percentile(latencies, 0.5))}, ` +
        `p99 ${ms(p99)}, max ${ms(latencies.at(-1) ?? Number.NaN)}; ${latencies.length}/${measured} arrived`,
    )
    const missing = measured - latencies.length
    printFigure({
      name: `webhook latency p99 (status in → receiver called) at ${rate}/s${missing ? `, ${missing} never arrived` : ''}`,
      figure: p99,
      unit: 'ms',
      better: 'lower',
      // Events that never arrived are not in the p99: the table then leaves the aim unjudged.
      aim: missing ? 'p99 ≤ 250 ms and every event arrives' : 'p99 ≤ 250 ms',
    })
  } finally {
    await services?.close()
    agent.destroy()
    receiver.closeAllConnections()
    receiver.close()
    await closeDb()
    await world.drop()
  }
}

await main()
