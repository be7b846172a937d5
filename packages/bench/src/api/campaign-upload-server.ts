/**
 * The API under the upload benchmark (`campaign-upload.ts`), in a process of its own so its memory
 * is its own: an approved key with `manage:campaigns` and `campaigns` draft campaigns of it. Tells
 * the parent `{url, key, campaignIds}` once listening; closes on SIGTERM.
 */
import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { owned } from '@dispatch/db'

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
  const row = await owned(app.deps.db, { apiKeyId: id, tenantId: null, senderId: 'default' }).campaigns.create(
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
const stop = async () => {
  await app.close()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('disconnect', stop)
