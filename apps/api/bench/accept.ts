/**
 * Accept-path benchmark: autocannon against POST /api/third-party/messages/send-text (approved key,
 * valid body), versus a bare Fastify route doing one Redis INCR, same connections and duration,
 * both served by this process. Prints each figure, its baseline and the ratio.
 *
 *   pnpm --filter @dispatch/api bench     (BENCH_CONNECTIONS, BENCH_DURATION_S to change the load)
 */
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { createBenchWorld, median, printComparison } from '@dispatch/testing/bench'
import Fastify, { type FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { buildApp, createDeps, createLogger, parseApiConfig } from '../src/app.ts'

const connections = Number(process.env.BENCH_CONNECTIONS ?? 100)
const duration = Number(process.env.BENCH_DURATION_S ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const body = JSON.stringify({ phone: '+5511987654321', text: 'Your code is 123456' })

interface Run {
  requestsPerSecond: number
  p99: number
  non2xx: number
  errors: number
}

/** autocannon in a child process, so the load generator does not share the server's event loop. */
function autocannon(url: string, headers: Record<string, string>, seconds = duration): Promise<Run> {
  const bin = createRequire(import.meta.url).resolve('autocannon/autocannon.js')
  const args = [bin, '-c', String(connections), '-d', String(seconds), '-m', 'POST', '-b', body, '--json']
  for (const [name, value] of Object.entries({ 'content-type': 'application/json', ...headers })) {
    args.push('-H', `${name}=${value}`)
  }
  args.push(url)
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (chunk) => {
      out += chunk
    })
    child.on('error', reject)
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}`))
      const result = JSON.parse(out)
      resolve({
        requestsPerSecond: result.requests.average,
        p99: result.latency.p99,
        non2xx: result.non2xx,
        errors: result.errors,
      })
    })
  })
}

const medianRun = (runs: Run[]): Run => ({
  requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
  p99: median(runs.map((r) => r.p99)),
  non2xx: 0,
  errors: 0,
})

const address = (app: FastifyInstance) => {
  const info = app.server.address()
  if (!info || typeof info === 'string') throw new Error('not listening')
  return `http://127.0.0.1:${info.port}`
}

async function main() {
  const world = await createBenchWorld('accept')
  const config = parseApiConfig({
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl,
    QUEUE_PREFIX: world.queuePrefix,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    // The per-key limit is part of the path being measured, set high enough not to refuse.
    MESSAGE_RATE_PER_SECOND: '1000000',
  })
  const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
  await app.listen({ host: '127.0.0.1', port: 0 })

  const baselineRedis = new Redis(world.redisUrl, { enableOfflineQueue: false })
  const baseline = Fastify({ loggerInstance: createLogger(config) })
  baseline.post('/incr', async (_request, reply) => {
    const n = await baselineRedis.incr(`${world.queuePrefix}:baseline`)
    return reply.code(202).send({ n })
  })
  await baseline.listen({ host: '127.0.0.1', port: 0 })

  try {
    const key = await approvedKey(app)
    console.log(
      `accept path: ${connections} connections, ${rounds} rounds of ${duration} s each side, log level ${config.LOG_LEVEL}`,
    )
    const baseUrl = `${address(baseline)}/incr`
    const sendUrl = `${address(app)}/api/third-party/messages/send-text`
    const sendHeaders = { 'x-api-key': key }
    // A short warm-up of each, so neither pays for JIT compilation in its measured run.
    await autocannon(baseUrl, {}, 2)
    await autocannon(sendUrl, sendHeaders, 2)
    // Alternating rounds, medians compared: a machine whose load drifts during the run moves
    // both sides alike rather than one.
    const baseRuns: Run[] = []
    const sendRuns: Run[] = []
    for (let round = 1; round <= rounds; round++) {
      const b = await autocannon(baseUrl, {})
      const s = await autocannon(sendUrl, sendHeaders)
      baseRuns.push(b)
      sendRuns.push(s)
      console.log(
        `  round ${round}/${rounds}: send-text ${Math.round(s.requestsPerSecond)} req/s, p99 ${s.p99} ms;` +
          ` baseline ${Math.round(b.requestsPerSecond)} req/s, p99 ${b.p99} ms`,
      )
      if (s.non2xx > 0 || s.errors > 0 || b.errors > 0) {
        throw new Error(`failed answers during the run: send ${s.non2xx} non-2xx, ${s.errors} errors`)
      }
    }
    const base = medianRun(baseRuns)
    const sendRun = medianRun(sendRuns)
    printComparison({
      name: 'send-text throughput',
      figure: sendRun.requestsPerSecond,
      baseline: base.requestsPerSecond,
      unit: 'req/s',
      better: 'higher',
      aim: '≥ 0.6',
    })
    printComparison({
      name: 'send-text p99 latency',
      figure: sendRun.p99,
      baseline: base.p99,
      unit: 'ms',
      better: 'lower',
      aim: `p99 ≤ 15 ms at ${connections} connections`,
    })
    const queued = await app.deps.messageQueue.count()
    console.log(`jobs queued during the runs: ${queued}`)
  } finally {
    await app.deps.messageQueue.obliterate({ force: true }).catch(() => {})
    await app.close()
    await baseline.close()
    baselineRedis.disconnect()
    await world.drop()
  }
}

async function approvedKey(app: FastifyInstance): Promise<string> {
  const admin = { authorization: `Bearer ${app.deps.config.adminTokens[0]?.token}` }
  const created = await app.inject({
    method: 'POST',
    url: '/api/api-keys/request',
    payload: { clientName: 'Bench', email: 'bench@dispatch.test', scopes: ['send:free-text'] },
  })
  const { id, key } = created.json()
  const approved = await app.inject({
    method: 'POST',
    url: `/api/admin/api-keys/${id}/approve`,
    headers: admin,
  })
  if (approved.statusCode !== 200) throw new Error(`approve failed: ${approved.body}`)
  return key
}

await main()
