/**
 * The cost of tenant-owned opt-outs on the accept path (issue 41): a send reads the recipient's own
 * entry, whose one value also holds every owner's (`scopeForOwner`): the key's owner's part is read. Side by
 * side in one process, one key with a tenant on the default sender, two apps on the same Postgres
 * and Redis: `on` as shipped, `off` with the owner left out of the checks (owner '': one key read,
 * the path before issue 41). CPU per request, pairs alternating (`pairedCpuPerSend`), for
 * `send-text` and a batch of BENCH_BATCH_SIZE (100) texts, each to fresh recipients. Aim ≤ 1.02.
 *
 *   pnpm --filter @dispatch/bench bench:consent-owner   (BENCH_PAIRS, BENCH_SENDS, BENCH_BATCHES,
 *   BENCH_BATCH_SIZE)
 */

import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { Redis } from 'ioredis'
import type { SendChecks } from '../../../../apps/api/src/sending/checks/send-checks.ts'
import { NUMBER, numberedBodies } from '../harness/load.ts'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { pairedCpuPerSend } from './inject.ts'

const pairs = Number(process.env.BENCH_PAIRS ?? 10)
const sends = Number(process.env.BENCH_SENDS ?? 1500)
const batches = Number(process.env.BENCH_BATCHES ?? 60)
const batchSize = Number(process.env.BENCH_BATCH_SIZE ?? 100)

const world = await createBenchWorld('consent-owner')
const env = {
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: world.redisUrl,
  QUEUE_PREFIX: world.queuePrefix,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  MESSAGE_RATE_PER_SECOND: '1000000000',
}
const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })

async function inProcessApp() {
  const config = parseApiConfig(env)
  const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
  await app.ready()
  return app
}

/** The checks as before issue 41: the owner's entry left out (owner '' reads the recipient's only). */
function withoutOwner(checks: SendChecks) {
  const prefetch = checks.prefetch.bind(checks)
  const check = checks.check.bind(checks)
  checks.prefetch = (senderId, body, type) => prefetch(senderId, body, type, '')
  checks.check = (senderId, sends, now, prefetched) => check(senderId, sends, now, prefetched, '')
}

const on = await inProcessApp()
const off = await inProcessApp()
withoutOwner(off.sending.checks)
try {
  const admin = { authorization: `Bearer ${on.deps.config.adminTokens[0]?.token}` }
  const created = await on.inject({
    method: 'POST',
    url: '/api/api-keys/request',
    payload: { clientName: 'Bench', email: 'bench@dispatch.test', scopes: ['send:free-text'] },
  })
  const { id, key } = created.json()
  const approved = await on.inject({
    method: 'POST',
    url: `/api/admin/api-keys/${id}/approve`,
    headers: admin,
    payload: { tenantId: 'acme' },
  })
  if (approved.statusCode !== 200) throw new Error(`approve failed: ${approved.body}`)

  const recipient = `+5531${NUMBER}`
  const cases = [
    {
      name: 'send-text',
      path: 'send-text',
      body: JSON.stringify({ phone: recipient, text: 'Hi' }),
      count: sends,
    },
    {
      name: `batch of ${batchSize} texts`,
      path: 'batch',
      body: JSON.stringify({
        messages: Array.from({ length: batchSize }, () => ({ type: 'text', phone: recipient, text: 'Hi' })),
      }),
      count: batches,
    },
  ]
  for (const c of cases) {
    await clearFairAdmission(redis, world.queuePrefix)
    const cpu = await pairedCpuPerSend(
      { on: { app: on, key }, off: { app: off, key } },
      {
        body: numberedBodies(c.body),
        count: c.count,
        pairs,
        path: c.path,
        between: () => clearFairAdmission(redis, world.queuePrefix),
      },
    )
    const ratios = cpu.on.map((value, i) => value / (cpu.off[i] as number))
    console.log(
      `  ${c.name} CPU, each pair on/off: ${ratios.map((r) => r.toFixed(3)).join(', ')} (median ${median(ratios).toFixed(3)})`,
    )
    printComparison({
      name: `${c.name} CPU per request in one process (${c.count} requests × ${pairs} pairs), owner's entry read vs not`,
      figure: median(cpu.on),
      baseline: median(cpu.off),
      unit: 'µs',
      better: 'lower',
      aim: '≤ 1.02',
    })
  }
} finally {
  await on.close()
  await off.close()
  redis.disconnect()
  await world.drop()
}
