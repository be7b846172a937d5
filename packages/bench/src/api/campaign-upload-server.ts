/**
 * The API under the upload benchmark (`campaign-upload.ts`), in a process of its own so its memory
 * is its own: an approved key with `manage:campaigns` and `campaigns` draft campaigns of it. Tells
 * the parent `{url, key, campaignIds}` once listening; closes on SIGTERM.
 *
 * To see where its memory goes: BENCH_MEMORY_LOG=1 prints its heap by space every second;
 * BENCH_V8_FLAGS sets V8 flags at start; with BENCH_V8_FLAGS=--expose-gc, BENCH_FORCE_GC=1 runs a
 * full GC before each print (what is live, not what V8 has yet to collect).
 */

import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { owned } from '@dispatch/db'

if (process.env.BENCH_V8_FLAGS) setFlagsFromString(process.env.BENCH_V8_FLAGS)
const config = parseApiConfig({
  DATABASE_URL: process.env.DATABASE_URL,
  REDIS_URL: process.env.REDIS_URL,
  QUEUE_PREFIX: process.env.QUEUE_PREFIX,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
})
const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
await app.listen({ host: '127.0.0.1', port: 0 })
const admin = { authorization: `Bearer ${app.deps.config.adminTokens[0]?.token}` }
const created = await app.inject({
  method: 'POST',
  url: '/api/api-keys/request',
  payload: { clientName: 'Bench', email: 'bench@dispatch.test', scopes: ['manage:campaigns'] },
})
const { id, key } = created.json()
await app.inject({ method: 'POST', url: `/api/admin/api-keys/${id}/approve`, headers: admin })
const campaignIds: string[] = []
for (let i = 0; i < Number(process.env.BENCH_CAMPAIGNS ?? 4); i++) {
  const row = await owned(app.deps.db, {
    apiKeyId: id,
    tenantId: null,
    senderId: 'default',
  }).campaigns.create(
    {
      name: `bench ${i}`,
      template: { templateId: 'december_sale', language: 'en' },
      startAt: null,
      validitySeconds: null,
      quietHours: null,
    },
    new Date(),
  )
  campaignIds.push(row.id)
}
const info = app.server.address()
if (!info || typeof info === 'string') throw new Error('not listening')
process.send?.({ url: `http://127.0.0.1:${info.port}`, key, campaignIds })
if (process.env.BENCH_MEMORY_LOG) {
  const mb = (n: number) => (n / 2 ** 20).toFixed(0)
  setInterval(() => {
    if (process.env.BENCH_FORCE_GC) (runInNewContext('gc') as () => void)()
    const m = process.memoryUsage()
    const spaces = getHeapSpaceStatistics()
      .filter((s) => s.space_used_size > 2 ** 20)
      .map((s) => `${s.space_name} ${mb(s.space_used_size)}`)
    console.error(
      `rss ${mb(m.rss)} heap ${mb(m.heapUsed)}/${mb(m.heapTotal)} external ${mb(m.external)} ${spaces.join(' ')}`,
    )
  }, 1000).unref()
}
const stop = async () => {
  await app.close()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('disconnect', stop)
