import { captureLogs, startSmtpServer, waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  ADMIN,
  asAdmin,
  buildTestApp,
  createWorld,
  decide,
  requestKey,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from './helpers.ts'

let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { LOG_LEVEL: 'trace' })
})
afterAll(async () => {
  await app.close()
  await world.close()
})

it('writes no key value and no admin token to any log line, at the most verbose level', async () => {
  const smtp = await startSmtpServer()
  const workerLogs = captureLogs()
  const worker = await startTestWorker(
    world,
    {
      SMTP_URL: smtp.url,
      OUTBOX_POLL_MS: '50',
      LOG_LEVEL: 'trace',
    },
    workerLogs.stream,
  )
  try {
    const key = await requestKey(app)
    await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key.key } })
    await decide(app, key.id, 'approve')
    await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key.key } })
    await app.inject({
      method: 'GET',
      url: `/api/api-keys/me?key=${key.key.slice(0, 8)}`,
      headers: { 'X-Api-Key': key.key },
    })
    await app.inject({ method: 'GET', url: '/api/admin/api-keys?take=5', headers: asAdmin(ADMIN.ops) })
    await decide(app, key.id, 'revoke', { reason: 'done' })
    await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key.key } })
    await waitFor(() => smtp.messages.length === 2, { what: 'both e-mails' })

    const all = `${app.logs.text()}\n${workerLogs.text()}`
    expect(app.logs.lines.length).toBeGreaterThan(10)
    expect(all).toContain(key.id)
    expect(all).not.toContain(key.key)
    expect(all).not.toContain(key.key.slice(8)) // not even the secret part alone
    expect(all).not.toContain(ADMIN.ana)
    expect(all).not.toContain(ADMIN.ops)
  } finally {
    await worker.close()
    await smtp.close()
  }
})
