import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'
import { QueueNames, type SenderView, senderQueueName } from '@dispatch/contracts'
import { startTcpProxy, waitFor } from '@dispatch/testing'
import { Queue, Worker } from 'bullmq'
import type { LightMyRequestResponse } from 'fastify'
import { Redis } from 'ioredis'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { QUEUE_LIST_REFRESH_MS } from '../../src/routes/queue-dashboard/queues.ts'
import { findChromium } from '../console/browser.ts'
import {
  ADMIN,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

/**
 * Bull Board at /admin/queues: HTTP Basic with the admin tokens on every path under it, the admin
 * brute-force limit, read-only, every queue listed (senders added later included); then the same
 * in real headless Chromium, as an admin would use it.
 */

const SMTP_ERROR = 'SMTP said 550 mailbox unavailable'
// The admin limit for this file: small, and a window long enough not to end during the test.
const LIMITS = { ADMIN_AUTH_FAILURE_MAX: '5', ADMIN_AUTH_FAILURE_WINDOW_MS: '60000' }
const REALM = 'Basic realm="Dispatch admin"'

const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
})
const asAna = () => basic('ana', ADMIN.ana)

/** Where the screenshots go: the repository's test-results/ (ignored by git). */
const OUTPUT = path.resolve(import.meta.dirname, '../../../../test-results/queue-dashboard')

const browserBinary = findChromium()
if (browserBinary.missing) {
  console.warn(`queue dashboard: the browser tests are skipped: ${browserBinary.missing}`)
}

let world: TestWorld
let app: TestApp
let baseUrl: string
let connection: Redis
let sender: SenderView
const queues: Queue[] = []

const createSender = async (displayName: string, phoneNumberId: string) => {
  const res = await app.inject({
    method: 'POST',
    url: '/api/admin/senders',
    headers: asAdmin(),
    payload: { phoneNumberId, displayName, accessToken: `EAAG-${phoneNumberId}-token` },
  })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<SenderView>()
}

beforeAll(async () => {
  world = await createWorld()
  connection = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
  const open = (name: string) => {
    const queue = new Queue(name, { connection, prefix: world.queuePrefix })
    queues.push(queue)
    return queue
  }

  // One e-mail that failed for good with the SMTP server's refusal, and one waiting.
  const email = open(QueueNames.email)
  await email.add('api-key.approved', { to: 'ops@acme.test' }, { jobId: 'bounced-1', attempts: 1 })
  const workerConnection = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
  const worker = new Worker(
    QueueNames.email,
    async () => {
      throw new Error(SMTP_ERROR)
    },
    { connection: workerConnection, prefix: world.queuePrefix },
  )
  await waitFor(async () => (await email.getJobCounts('failed')).failed === 1, { what: 'the failed e-mail' })
  await worker.close()
  workerConnection.disconnect()
  await email.add('api-key.rejected', { to: 'dev@acme.test' }, { jobId: 'waiting-1' })
  // Two messages waiting on the default sender, one webhook delivery waiting.
  await open(senderQueueName('default')).addBulk(
    [1, 2].map((n) => ({ name: 'message', data: { n }, opts: { jobId: `m-${n}` } })),
  )
  await open(QueueNames.webhooks).add('delivery', { eventId: 'e-1' }, { jobId: 'w-1' })

  app = await buildTestApp(world, LIMITS)
  sender = await createSender('Acme Brazil', '1065403522429')
  // Setup, not a figure under test. The board reads the senders on the change's notice, and every
  // QUEUE_LIST_REFRESH_MS should a notice be lost: on a loaded CI machine the sender was still
  // missing after 30 s once, so the wait covers the minute's refresh (usually it takes under 1 s).
  // Should it time out, the board's last answer says why (its queues, or its error).
  let lastAnswer = 'none yet'
  await waitFor(
    async () => {
      const answer = await boardAnswer()
      lastAnswer = 'names' in answer ? answer.names.join(', ') : answer.error
      return 'names' in answer && answer.names.includes(`messages.${sender.id}`)
    },
    { what: 'the sender’s queue on the board', timeoutMs: QUEUE_LIST_REFRESH_MS + 15_000 },
  ).catch((error: Error) => {
    const warnings = app.logs.lines.filter((line) => /"level":(40|50|60)/.test(line)).slice(-5)
    throw new Error(
      `${error.message}; the board's last answer: ${lastAnswer}; the API's last warnings: ${warnings.join('\n') || 'none'}`,
    )
  })
  baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
}, QUEUE_LIST_REFRESH_MS + 60_000)

afterAll(async () => {
  await app?.close()
  for (const queue of queues) await queue.close()
  connection?.disconnect()
  await world?.close()
})

interface BoardQueue {
  name: string
  displayName?: string
  readOnlyMode: boolean
  counts: Record<string, number>
}
const boardQueues = async (on: TestApp = app) => {
  const res = await on.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: asAna() })
  expect(res.statusCode, res.body).toBe(200)
  return (res.json() as { queues: BoardQueue[] }).queues
}
/**
 * The board's queue names while waiting for a change to show: an answer the board could not give
 * (its Redis command timed out on a loaded machine, a 500) is "not yet", not a failure.
 */
/** The names of the queues on the board, or what it answered instead. */
const boardAnswer = async (on: TestApp = app): Promise<{ names: string[] } | { error: string }> => {
  const res = await on.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: asAna() })
  return res.statusCode === 200
    ? { names: (res.json() as { queues: BoardQueue[] }).queues.map((q) => q.name) }
    : { error: `${res.statusCode} ${res.body.slice(0, 300)}` }
}

const boardQueueNamesSoFar = async (on: TestApp = app) => {
  const answer = await boardAnswer(on)
  return 'names' in answer ? answer.names : undefined
}

/** 401, the browser's prompt, the error body, and nothing about any queue. */
function expectSignInAsked(res: LightMyRequestResponse, what: string) {
  expect(res.statusCode, `${what}: ${res.body}`).toBe(401)
  expect(res.headers['www-authenticate'], what).toBe(REALM)
  if (res.body) {
    expectError(res, 401, 'ADMIN_AUTH_REQUIRED')
    for (const name of ['email', 'webhooks', 'messages', 'bounced', 'SMTP', sender.id]) {
      expect(res.body, what).not.toContain(name)
    }
  }
}

/** The page's own assets, as the page names them (the bundle's names carry a hash). */
async function assetPaths(): Promise<string[]> {
  const res = await app.inject({ method: 'GET', url: '/admin/queues', headers: asAna() })
  expect(res.statusCode).toBe(200)
  const assets = [...res.body.matchAll(/(?:src|href)="(static\/[^"]+)"/g)].map((m) => `/admin/queues/${m[1]}`)
  expect(assets.length).toBeGreaterThan(2)
  return assets
}

describe('signing in', () => {
  it('every path under /admin/queues asks for credentials, and answers them', async () => {
    const paths = [
      '/admin/queues',
      '/admin/queues/',
      '/admin/queues/queue/email',
      '/admin/queues/queue/email/bounced-1',
      '/admin/queues/api/queues',
      '/admin/queues/api/queues/email/bounced-1',
      '/admin/queues/api/queues/email/bounced-1/logs',
      '/admin/queues/api/redis/stats',
      ...(await assetPaths()),
    ]
    for (const url of paths) {
      for (const method of ['GET', 'HEAD'] as const) {
        expectSignInAsked(await app.inject({ method, url }), `${method} ${url}`)
        const signedIn = await app.inject({ method, url, headers: asAna() })
        expect(signedIn.statusCode, `${method} ${url} signed in: ${signedIn.body.slice(0, 200)}`).toBe(200)
      }
    }
    // What does not exist is not told apart without credentials either.
    expectSignInAsked(await app.inject({ method: 'GET', url: '/admin/queues/no/such/page' }), 'unknown path')
    expectSignInAsked(
      await app.inject({ method: 'GET', url: '/admin/queues/static/nope.js' }),
      'unknown asset',
    )
    expectError(
      await app.inject({ method: 'GET', url: '/admin/queues/no/such/page', headers: asAna() }),
      404,
      'NOT_FOUND',
    )
  })

  it('takes each admin by name and token, and nothing else', async () => {
    const address = '198.51.100.20'
    const get = (headers: Record<string, string>) =>
      app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers, remoteAddress: address })
    expect((await get(basic('ana', ADMIN.ana))).statusCode).toBe(200)
    expect((await get(basic('ops', ADMIN.ops))).statusCode).toBe(200)
    for (const [what, headers] of [
      ['the other admin name', basic('ops', ADMIN.ana)],
      ['a wrong token', basic('ana', `${ADMIN.ana}x`)],
      ['the admin API bearer token', asAdmin()],
      ['a malformed Basic header', { authorization: 'Basic !!!' }],
    ] as const) {
      expectSignInAsked(await get(headers), what)
    }
    // Four failures so far, one short of the limit: the admin still gets in.
    expect((await get(asAna())).statusCode).toBe(200)
  })

  it('counts wrong credentials toward the admin brute-force limit, shared with the admin API', async () => {
    const attacker = '198.51.100.21'
    const dashboard = (headers: Record<string, string>, remoteAddress = attacker) =>
      app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers, remoteAddress })
    const adminApi = (headers: Record<string, string>, remoteAddress = attacker) =>
      app.inject({ method: 'GET', url: '/api/admin/api-keys', headers, remoteAddress })

    for (let i = 0; i < 3; i++) expectSignInAsked(await dashboard(basic('ana', `guess-${i}`)), `guess ${i}`)
    for (let i = 3; i < 5; i++) {
      expectError(await adminApi({ authorization: `Bearer guess-${i}` }), 401, 'ADMIN_AUTH_REQUIRED')
    }
    // Past the limit (5 in this file's config): 429 for the right credentials too, on both.
    for (const res of [await dashboard(asAna()), await dashboard({}), await adminApi(asAdmin())]) {
      expectError(res, 429, 'RATE_LIMITED', /too many failed authentication attempts/i)
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0)
      expect(res.headers['www-authenticate']).toBeUndefined()
      expect(res.body).not.toContain('email')
    }
    // The admin elsewhere is not locked out.
    expect((await dashboard(asAna(), '203.0.113.60')).statusCode).toBe(200)
  })

  it('does not count requests without credentials (a browser asks first)', async () => {
    const address = '198.51.100.22'
    for (let i = 0; i < 10; i++) {
      expectSignInAsked(
        await app.inject({ method: 'GET', url: '/admin/queues', remoteAddress: address }),
        `request ${i}`,
      )
    }
    const res = await app.inject({
      method: 'GET',
      url: '/admin/queues',
      headers: asAna(),
      remoteAddress: address,
    })
    expect(res.statusCode).toBe(200)
  })

  it('stays out of the OpenAPI document', async () => {
    const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json<{ paths: object }>()
    expect(Object.keys(document.paths).filter((p) => p.startsWith('/admin'))).toEqual([])
  })
})

describe('what it shows', () => {
  it('every queue: email, webhooks, consent confirmations and each sender’s, with counts per state, read-only', async () => {
    const board = await boardQueues()
    const byName = new Map(board.map((q) => [q.name, q]))
    expect([...byName.keys()].sort()).toEqual(
      ['consent-confirmations', 'email', 'messages', `messages.${sender.id}`, 'webhooks'].sort(),
    )
    expect(byName.get('email')?.counts).toMatchObject({ failed: 1, waiting: 1 })
    expect(byName.get('messages')?.counts).toMatchObject({ waiting: 2 })
    expect(byName.get('webhooks')?.counts).toMatchObject({ waiting: 1 })
    expect(byName.get(`messages.${sender.id}`)?.displayName).toBe('messages · Acme Brazil')
    for (const queue of board) expect(queue.readOnlyMode, queue.name).toBe(true)
  })

  it('a failed job with its error and stack trace', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/admin/queues/api/queues/email/bounced-1',
      headers: asAna(),
    })
    expect(res.statusCode, res.body).toBe(200)
    const { job } = res.json() as { job: { failedReason: string; stacktrace: string[] } }
    expect(job.failedReason).toBe(SMTP_ERROR)
    expect(job.stacktrace[0]).toContain(`Error: ${SMTP_ERROR}`)
  })

  it('a sender added or removed through the admin API, without a restart', async () => {
    const added = await createSender('Acme Mexico', '1065403522430')
    // The periodic refresh is a minute away: this is the change notice on the senders channel.
    await waitFor(async () => (await boardQueueNamesSoFar())?.includes(`messages.${added.id}`), {
      timeoutMs: 5000,
      what: 'the new sender’s queue on the board',
    })
    // Another instance, started now, reads the senders as it starts.
    const other = await buildTestApp(world, LIMITS)
    try {
      await waitFor(async () => (await boardQueueNamesSoFar(other))?.includes(`messages.${added.id}`), {
        timeoutMs: 5000,
        what: 'the sender’s queue on a new instance',
      })
    } finally {
      await other.close()
    }
    const removed = await app.inject({
      method: 'DELETE',
      url: `/api/admin/senders/${added.id}`,
      headers: asAdmin(),
    })
    expect(removed.statusCode, removed.body).toBeLessThan(300)
    await waitFor(
      async () => {
        const names = await boardQueueNamesSoFar()
        return names !== undefined && !names.includes(`messages.${added.id}`)
      },
      {
        timeoutMs: 5000,
        what: 'the removed sender’s queue gone from the board',
      },
    )
  })
  /** Another API instance whose Postgres or Redis is reached through a proxy the test controls. */
  const behindProxy = async (service: 'DATABASE_URL' | 'REDIS_URL') => {
    const url = new URL(service === 'DATABASE_URL' ? world.databaseUrl : world.redisUrl)
    const port = Number(url.port || (service === 'DATABASE_URL' ? 5432 : 6379))
    const proxy = await startTcpProxy({ host: url.hostname, port })
    url.host = new URL(proxy.url('tcp')).host
    const instance = await buildTestApp(world, { ...LIMITS, [service]: url.toString() })
    await boardShows(instance, sender.id, 'the senders read at start')
    return { instance, proxy, close: () => instance.close().then(() => proxy.close()) }
  }
  const boardShows = (on: TestApp, senderId: string, what: string) =>
    waitFor(async () => (await boardQueueNamesSoFar(on))?.includes(`messages.${senderId}`), {
      timeoutMs: 10_000,
      what,
    })
  const removeSender = async (id: string) => {
    const removed = await app.inject({
      method: 'DELETE',
      url: `/api/admin/senders/${id}`,
      headers: asAdmin(),
    })
    expect(removed.statusCode, removed.body).toBeLessThan(300)
  }

  it('a sender added while the board could not read Postgres shows once it can, not a minute later', async () => {
    const { instance: cut, proxy, close } = await behindProxy('DATABASE_URL')
    try {
      await proxy.cut()
      // Added through the other instance: this one hears the notice and cannot read.
      const added = await createSender('Acme Chile', '1065403522431')
      await waitFor(() => cut.logs.text().includes('could not read the senders') || undefined, {
        what: 'the failed read',
      })
      await proxy.restore()
      await boardShows(cut, added.id, 'the new sender on the board once Postgres answers')
      await removeSender(added.id)
    } finally {
      await close()
    }
  })
  it('a queue that could not be opened (its Redis read timed out) is opened again, not shown broken', async () => {
    const { instance: slow, proxy, close } = await behindProxy('REDIS_URL')
    try {
      // Redis stops answering this instance (notices still reach it): the new sender's queue is
      // opened meanwhile, and BullMQ's opening read times out, which leaves that queue broken.
      proxy.stall()
      const added = await createSender('Acme Peru', '1065403522432')
      await waitFor(() => slow.logs.text().includes('Command timed out') || undefined, {
        what: 'the opening read timing out',
      })
      proxy.flow()
      await boardShows(slow, added.id, 'the new sender on the board once Redis answers')
      await removeSender(added.id)
    } finally {
      await close()
    }
  })
})

describe('changes', () => {
  it('are refused with 405 and logged with the admin’s name; the job stays failed', async () => {
    const changes = [
      ['PUT', '/admin/queues/api/queues/email/retry/failed'],
      ['PUT', '/admin/queues/api/queues/email/bounced-1/retry'],
      ['PUT', '/admin/queues/api/queues/email/clean/failed'],
      ['PUT', '/admin/queues/api/queues/pause'],
      ['POST', '/admin/queues/api/queues/email/add'],
      ['PATCH', '/admin/queues/api/queues/email/bounced-1/update-data'],
      ['DELETE', '/admin/queues/api/queues/email'],
    ] as const
    for (const [method, url] of changes) {
      expectSignInAsked(await app.inject({ method, url, payload: {} }), `${method} ${url}`)
      const res = await app.inject({ method, url, headers: basic('ops', ADMIN.ops), payload: {} })
      expectError(res, 405, 'METHOD_NOT_ALLOWED', /read-only/)
      expect(res.headers.allow).toBe('GET, HEAD')
      const line = app.logs.lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.url === url && l.method === method && l.admin === 'ops')
      expect(line, `${method} ${url} logged`).toMatchObject({
        level: 30,
        msg: expect.stringMatching(/read-only/),
      })
    }
    const job = await queues.find((q) => q.name === 'email')?.getJob('bounced-1')
    expect(await job?.getState()).toBe('failed')
  })
})

describe.skipIf(!browserBinary.path)(
  `in headless Chromium${browserBinary.missing ? ` (skipped: ${browserBinary.missing})` : ''}`,
  () => {
    let browser: Browser
    beforeAll(async () => {
      rmSync(OUTPUT, { recursive: true, force: true })
      mkdirSync(OUTPUT, { recursive: true })
      // As root (CI, containers) Chromium refuses its sandbox.
      browser = await chromium.launch({ executablePath: browserBinary.path, args: ['--no-sandbox'] })
    })
    afterAll(async () => {
      await browser?.close()
    })

    /** A page that loads only from the API: Bull Board's web fonts are not needed, or reachable in CI. */
    async function newPage(credentials?: { username: string; password: string }): Promise<Page> {
      const context = await browser.newContext({
        ...(credentials ? { httpCredentials: credentials } : {}),
        viewport: { width: 1280, height: 800 },
      })
      await context.route(
        (url) => !url.href.startsWith(baseUrl),
        (route) => route.abort(),
      )
      return context.newPage()
    }

    it('without credentials, shows nothing of the queues', async () => {
      const page = await newPage()
      const answers: { url: string; status: number; challenge?: string }[] = []
      page.on('response', (res) =>
        answers.push({ url: res.url(), status: res.status(), challenge: res.headers()['www-authenticate'] }),
      )
      for (const url of ['/admin/queues', '/admin/queues/queue/email', '/admin/queues/api/queues']) {
        // The server asks for credentials; with none to give (a user cancelling the prompt),
        // Chromium ends the navigation on its own error page.
        const failure = await page.goto(`${baseUrl}${url}`).then(
          (res) => `answered ${res?.status()}`,
          (error: Error) => error.message,
        )
        expect(failure, url).toMatch(/ERR_INVALID_AUTH_CREDENTIALS|answered 401/)
        expect(answers.find((a) => a.url === `${baseUrl}${url}`)).toEqual({
          url: `${baseUrl}${url}`,
          status: 401,
          challenge: REALM,
        })
        // The error page commits just after the navigation fails: read the page once it settles.
        const html = await waitFor(() => page.content().catch(() => undefined), {
          what: 'the page to settle',
        })
        for (const name of ['email', 'webhooks', 'messages', 'Acme', 'SMTP']) {
          expect(html, url).not.toContain(name)
        }
      }
      // Nothing but the refused navigations was loaded: no asset, no API call.
      expect(answers.map((a) => a.status)).toEqual([401, 401, 401])
      await page.screenshot({ path: path.join(OUTPUT, 'signed-out.png') })
      await page.context().close()
    })

    it('signed in: lists the queues with their counts, opens the failed job and shows its error', async () => {
      const page = await newPage({ username: 'ana', password: ADMIN.ana })
      const res = await page.goto(`${baseUrl}/admin/queues`)
      expect(res?.status()).toBe(200)

      // The overview: one card per queue, named, with its total and its failed count.
      const card = (name: string) =>
        page.locator('main li').filter({ has: page.locator(`a[title="${name}"]`) })
      const expected = [
        ['email', /Failed\s*1[\s\S]*2 Jobs/],
        ['webhooks', /1 Job\b/],
        ['messages', /2 Jobs/],
        ['messages · Acme Brazil', /0 Jobs/],
      ] as const
      for (const [name, counts] of expected) {
        await card(name).filter({ hasText: counts }).waitFor({ timeout: 10_000 })
      }
      // The sidebar lists them by queue name.
      const sidebar = await page.locator('aside, nav').first().textContent()
      for (const name of ['email', 'webhooks', 'messages', `messages.${sender.id}`]) {
        expect(sidebar).toContain(name)
      }
      await page.screenshot({ path: path.join(OUTPUT, 'overview.png'), fullPage: true })

      // Into the e-mail queue, its failed jobs, the failed job's error and stack.
      await card('email').locator('a[title="email"]').click()
      await page.waitForURL(/\/admin\/queues\/queue\/email/)
      await page.locator('a[href*="status=failed"]').first().click()
      await page.getByText('bounced-1').first().waitFor()
      const error = page.getByText(SMTP_ERROR).first()
      await error.waitFor({ timeout: 10_000 })
      expect(await page.locator('pre, code').filter({ hasText: SMTP_ERROR }).first().textContent()).toMatch(
        /SMTP said 550 mailbox unavailable\s+at /,
      )
      // Read-only: no action on the job or the queue.
      expect(
        await page.getByRole('button', { name: /^(retry|clean|remove|promote|duplicate|add job)/i }).count(),
      ).toBe(0)

      const screenshot = path.join(OUTPUT, 'failed-job.png')
      await page.screenshot({ path: screenshot, fullPage: true })
      expect(existsSync(screenshot)).toBe(true)
      expect(statSync(screenshot).size).toBeGreaterThan(10_000)
      await page.context().close()
    })
  },
)
