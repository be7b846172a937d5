import { randomBytes } from 'node:crypto'
import type { SenderView, TemplateList } from '@dispatch/contracts'
import { type FakeTemplate, type FakeWhatsApp, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  asAdmin,
  buildTestApp,
  createWorld,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const SECRETS_KEY = randomBytes(32).toString('base64')
const WABA = '310000000000001'
const TOKEN = `EAAG${randomBytes(16).toString('hex')}`
const INTERVAL_MS = 1500
/** Each page answers this late, so two syncs at once would interleave their reads. */
const PAGE_LATENCY_MS = 150

const template = (i: number): FakeTemplate => ({
  id: String(6_000_000 + i),
  name: `scheduled_${i}`,
  language: 'en_US',
  status: 'APPROVED',
  category: 'UTILITY',
  components: [{ type: 'BODY', text: 'Hi {{1}}' }],
})

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
const workers: RunningWorker[] = []
let sender: SenderView

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  fake.templates.set(
    WABA,
    Array.from({ length: 300 }, (_, i) => template(i)),
  )
  fake.templates.requireToken(WABA, TOKEN)
  fake.templates.latencyMs = PAGE_LATENCY_MS
  app = await buildTestApp(world, { SECRETS_KEY, WHATSAPP_API_URL: fake.url })
  const res = await app.inject({
    method: 'POST',
    url: '/api/admin/senders',
    headers: asAdmin(),
    payload: { phoneNumberId: '210000000000001', displayName: 'Scheduled', accessToken: TOKEN, wabaId: WABA },
  })
  expect(res.statusCode, res.body).toBe(201)
  sender = res.json<SenderView>()
})

afterAll(async () => {
  for (const worker of workers) await worker.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

it('workers sync each catalog on their own, one sync at a time and once per interval across processes', async () => {
  const env = { SECRETS_KEY, WHATSAPP_API_URL: fake.url, TEMPLATE_SYNC_INTERVAL_MS: String(INTERVAL_MS) }
  workers.push(await startTestWorker(world, env), await startTestWorker(world, env))

  const listed = await waitFor(
    async () => {
      const res = await app.inject({
        method: 'GET',
        url: `/api/admin/senders/${sender.id}/templates?take=1`,
        headers: asAdmin(),
      })
      const page = res.json<TemplateList>()
      // The page and its count are two reads: a sync committing between them shows a count of 300
      // over the empty page read before it (CI caught one). Both are awaited.
      return page.itemCount === 300 && page.data.length === 1 ? page : undefined
    },
    { what: 'the catalog synced by a worker', timeoutMs: 15_000 },
  )
  expect(listed.data[0]?.name).toMatch(/^scheduled_/)

  // Let several intervals pass with both workers running.
  await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS * 3))
  const reads = fake.templateReads.filter(({ url }) => url.pathname.endsWith(`/${WABA}/message_templates`))
  // A sync is two pages: the first without a cursor, the second with one. Interleaved syncs would
  // show two first pages in a row.
  const syncs: Array<{ start: number; end: number }> = []
  reads.forEach(({ url, receivedAt }, i) => {
    const first = !url.searchParams.has('after')
    expect(first, `read ${i} of ${reads.length}`).toBe(i % 2 === 0)
    if (first) syncs.push({ start: receivedAt, end: receivedAt })
    else (syncs.at(-1) as { end: number }).end = receivedAt + PAGE_LATENCY_MS
  })
  expect(syncs.length).toBeGreaterThanOrEqual(2)
  // Never again before the interval has passed since the last sync, whichever process ran it.
  for (let i = 1; i < syncs.length; i++) {
    const gap = (syncs[i] as { start: number }).start - (syncs[i - 1] as { end: number }).end
    expect(gap).toBeGreaterThanOrEqual(INTERVAL_MS - 250)
  }
})
