import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  createTestDatabase,
  deleteKeysUnder,
  ENTRY_POINTS,
  freePort,
  type Service,
  serviceReport,
  startService,
  testQueuePrefix,
  testRedisUrl,
} from '@dispatch/testing'
import { expect } from 'vitest'
import {
  NOT_WALKTHROUGHS,
  type Placeholder,
  pagesWithPromises,
  readWalkthroughs,
  type Step,
  WALKTHROUGH_PAGES,
  type Walkthrough,
} from './docs.ts'
import { broken, type Promised, parsePromise, valueAt } from './promise.ts'
import { type Ran, Shell } from './shell.ts'

/**
 * What the walkthrough tests share (walkthroughs.test.ts: the docs' orders; walkthroughs-alone.test.ts:
 * each page alone). Issue 45: every walkthrough in the docs works on its own from a fresh start and after the others,
 * in any order. The commands are read from the pages themselves (docs.ts) and run as written, in
 * bash, against the service as the docs start it (the API and the worker, pointed at the fake Cloud
 * API and the fake SMS provider, and the webhook receiver); each `# →` promise is checked against the
 * answer. Every page runs first on a fresh service once: each alone on a service of its own (its
 * fakes, database and key prefix), but for the two that open the orders; then all of them one after
 * another on one service, in the docs' order, and in reverse on a fresh one. Each page runs in a
 * shell of its own (no variable carries from page to page). The convention: README.md,
 * "Walkthroughs in the docs".
 */

const root = fileURLToPath(new URL('../../../../', import.meta.url))
const APP_SECRET = 'demo-app-secret-123'
const PHONE_NUMBER_ID = '106540352242922'
/** As docs/fallback.md starts the fakes: a recipient not on WhatsApp (131026), and the SMS account. */
const UNDELIVERABLE = '+4915100000000'
const SMS_ACCOUNT_SID = 'ACfake0000000000000000000000000000'
const SMS_AUTH_TOKEN = 'fake-sms-auth-token'
/** How long a read (a curl that only GETs) is asked again until it answers what is promised: a
 * media reply goes through the fake Cloud API, the worker and the webhook receiver, which on a busy
 * 2-core CI machine once took more than 30 s. */
const READ_PATIENCE_MS = 60_000
/** Starting five processes on a busy CI machine (2 cores, the rest of the suite beside it) is slow. */
const STARTUP_MS = 120_000

interface Running {
  apiUrl: string
  apiPort: number
  receiverPort: number
  env: NodeJS.ProcessEnv
  scratch: string
  services: Service[]
  stop(): Promise<void>
}

/**
 * A fresh service: the fake Cloud API, the fake SMS provider, the webhook receiver, the API and the
 * worker, on a database and key prefix of their own.
 */
async function startAll(): Promise<Running> {
  const started = Date.now()
  const db = await createTestDatabase()
  const prefix = testQueuePrefix()
  const redisUrl = testRedisUrl()
  const [apiPort, fakePort, receiverPort, smsPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ]
  const scratch = mkdtempSync(join(tmpdir(), 'walkthroughs-'))
  mkdirSync(join(scratch, '.mail'))
  const apiUrl = `http://127.0.0.1:${apiPort}`
  const fakeEnv = {
    FAKE_WHATSAPP_PORT: String(fakePort),
    FAKE_WEBHOOK_URL: `${apiUrl}/api/webhooks/whatsapp`,
    WHATSAPP_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
  }
  const serviceEnv = {
    APP_ENV: 'development',
    LOG_LEVEL: 'info',
    DATABASE_URL: db.url,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    HOST: '127.0.0.1',
    PORT: String(apiPort),
    MAIL_DIR: join(scratch, '.mail'),
    // As docs/messaging.md starts it against the fake, and docs/webhooks.md adds for quick retries.
    WHATSAPP_API_URL: `http://127.0.0.1:${fakePort}/v21.0`,
    WHATSAPP_ACCESS_TOKEN: 'fake-token',
    WHATSAPP_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
    WHATSAPP_APP_SECRET: APP_SECRET,
    WEBHOOK_RETRY_SCHEDULE: '5s,10s,30s,1m,5m,30m,2h',
    // As docs/fallback.md starts them against the fake SMS provider.
    SMS_PROVIDER: 'twilio',
    SMS_API_URL: `http://127.0.0.1:${smsPort}`,
    SMS_ACCOUNT_SID,
    SMS_AUTH_TOKEN,
    SMS_FROM: '+15005550006',
    SMS_STATUS_CALLBACK_URL: `${apiUrl}/api/webhooks/sms/status`,
  }
  const services: Service[] = []
  // A run cut short (its timeout) leaves no process behind when the test process ends.
  const killAll = () => {
    for (const service of services) service.child.kill('SIGKILL')
  }
  process.once('exit', killAll)
  const stop = async () => {
    process.off('exit', killAll)
    const stopping = Date.now()
    await Promise.all(
      services.map(async (service) => {
        await service.stop(10_000)
        if (process.env.WALKTHROUGH_VERBOSE)
          console.log(`${service.name} stopped in ${Date.now() - stopping} ms`)
      }),
    )
    await deleteKeysUnder(redisUrl, prefix)
    await db.drop()
    rmSync(scratch, { recursive: true, force: true })
  }
  try {
    const fake = startService('fake-whatsapp', 'packages/testing/src/fake-whatsapp-cli.ts', {
      ...fakeEnv,
      WHATSAPP_APP_SECRET: APP_SECRET,
      FAKE_UNDELIVERABLE: UNDELIVERABLE,
    })
    const sms = startService('fake-sms', 'packages/testing/src/fake-sms-cli.ts', {
      FAKE_SMS_PORT: String(smsPort),
      SMS_ACCOUNT_SID,
      SMS_AUTH_TOKEN,
    })
    const receiver = startService('webhook-receiver', 'packages/testing/src/webhook-receiver-cli.ts', {
      RECEIVER_PORT: String(receiverPort),
    })
    const api = startService('api', ENTRY_POINTS.api, serviceEnv)
    const worker = startService('worker', ENTRY_POINTS.worker, serviceEnv)
    services.push(fake, sms, receiver, api, worker)
    if (process.env.WALKTHROUGH_VERBOSE) {
      for (const [service, line] of [
        [fake, 'Fake WhatsApp Cloud API on'],
        [sms, 'Fake SMS provider on'],
        [receiver, 'Webhook receiver on'],
        [api, 'Dispatch API listening'],
        [worker, 'Dispatch worker running'],
      ] as const) {
        void service.logged(line, STARTUP_MS).then(
          () => console.log(`${service.name} up in ${Date.now() - started} ms`),
          () => {},
        )
      }
    }
    await Promise.all([
      fake.logged('Fake WhatsApp Cloud API on', STARTUP_MS),
      sms.logged('Fake SMS provider on', STARTUP_MS),
      receiver.logged('Webhook receiver on', STARTUP_MS),
      api.logged('Dispatch API listening', STARTUP_MS),
      worker.logged('Dispatch worker running', STARTUP_MS),
    ])
  } catch (error) {
    const reports = services
      .map((service) => `${serviceReport(service)}\n${JSON.stringify(service.logs().slice(-5))}`)
      .join('\n')
    await stop()
    throw new Error(`${(error as Error).message}\n${reports}`)
  }
  if (process.env.WALKTHROUGH_VERBOSE) {
    // Each process's CPU time so far (Linux: utime + stime in /proc, in ticks of 10 ms).
    const cpu = services.map((service) => {
      try {
        const fields =
          readFileSync(`/proc/${service.child.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
        return `${service.name} ${(Number(fields[11]) + Number(fields[12])) * 10} ms`
      } catch {
        return `${service.name} ?`
      }
    })
    console.log(`a fresh service in ${Date.now() - started} ms (CPU: ${cpu.join(', ')})`)
  }
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LANG: 'C.UTF-8',
    // For the commands that run the repository's own tools (db:seed, fake:reply, fake:template-status).
    DATABASE_URL: db.url,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    APP_ENV: 'development',
    ...fakeEnv,
  }
  return { apiUrl, apiPort, receiverPort, env, scratch, services, stop }
}

/**
 * The only changes made to a command: the addresses of the API and the receiver (each run has its
 * own ports) and the path of `scripts/` (the commands run in a scratch folder, so files they write,
 * `receipt.jpg` say, land there).
 */
const rewrite = (command: string, running: Running) =>
  command
    .replaceAll('http://127.0.0.1:3000', running.apiUrl)
    .replaceAll('127.0.0.1:4020', `127.0.0.1:${running.receiverPort}`)
    .replace(/(^|[\s;(])bash scripts\//g, `$1bash ${root}scripts/`)

/** A command that only reads (every curl a GET): asked again while the service catches up. */
const isRead = (command: string) =>
  /\bcurl\b/.test(command) && !/\s(-X|-d|--data\S*|-F|--form)\s/.test(command) && !/\bfake:/.test(command)

const shellQuote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`

/** A key with these scopes, requested and approved (tenant `acme`) as the README's first steps do. */
async function keyWith(running: Running, page: string, scopes: string[]): Promise<string> {
  const requested = await fetch(`${running.apiUrl}/api/api-keys/request`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      clientName: `Walkthrough ${page}`,
      email: 'ops@acme.test',
      scopes,
      tenantId: 'acme',
    }),
  })
  const key = (await requested.json()) as { id: string; key: string }
  if (requested.status !== 201)
    throw new Error(`requesting a key with ${scopes.join(', ')}: ${JSON.stringify(key)}`)
  const approved = await fetch(`${running.apiUrl}/api/admin/api-keys/${key.id}/approve`, {
    method: 'POST',
    headers: { authorization: 'Bearer dev-admin-token-change-me', 'content-type': 'application/json' },
    body: JSON.stringify({ tenantId: 'acme' }),
  })
  if (approved.status !== 200) throw new Error(`approving the key: ${await approved.text()}`)
  return key.key
}

/** The value a placeholder stands for: from the page's last answer, or a key the page asks for. */
async function fill(placeholder: Placeholder, last: Ran | undefined, running: Running, page: string) {
  if (placeholder.keyWithScopes) {
    // The key stands where the word with the ellipsis does (`KEY='x-api-key: mdk_dev_…'` too).
    const key = await keyWith(running, page, placeholder.keyWithScopes)
    return placeholder.written.replace(/\S*…\S*/, key)
  }
  if (!last) {
    throw new Error(
      `${placeholder.name}=${placeholder.written} has no answer before it to be taken from; a key the page needs says so: "# a key with <scopes>"`,
    )
  }
  const prefix = placeholder.written.split('…')[0] ?? ''
  let json: unknown
  try {
    json = JSON.parse(last.output)
  } catch {}
  if (json !== undefined) {
    const paths = [placeholder.field, placeholder.name.toLowerCase(), 'id', 'messageId'].filter(
      (path): path is string => Boolean(path),
    )
    for (const path of paths) {
      for (const value of [valueAt(json, path), valueAt(json, `data[0].${path}`)]) {
        if ((typeof value === 'string' || typeof value === 'number') && String(value).startsWith(prefix)) {
          return String(value)
        }
      }
    }
  } else if (prefix) {
    const found = new RegExp(`${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[A-Za-z0-9_-]+`).exec(
      last.output,
    )
    if (found) return found[0]
  }
  throw new Error(
    `${placeholder.name}=${placeholder.written}: no ${placeholder.field ?? placeholder.name.toLowerCase()} in the answer before it: ${last.output.slice(0, 300)}`,
  )
}

/**
 * `"<ID>"` in a promise is the value of the page's `$ID`; one not set yet (`"id":"<REPLY>"` where the
 * next line takes `REPLY=…` from this answer) stands for any value.
 */
async function withVariables(promised: Promised, shell: Shell): Promise<Promised> {
  const names = [...new Set([...promised.text.matchAll(/<([A-Z_][A-Z0-9_]*)>/g)].map((m) => m[1] as string))]
  if (names.length === 0) return promised
  let text = promised.text
  for (const name of names) {
    const value = (await shell.run(`printf %s "\${${name}-}"`)).output
    text = text.replaceAll(`<${name}>`, value || '…')
  }
  return parsePromise(text)
}

const describeStep = (step: Step) =>
  `${step.page}:${step.line}\n    ${step.command.split('\n').join('\n    ')}`

/** Runs one page's commands in a shell of its own; the first broken promise ends the page. */
async function runPage(walkthrough: Walkthrough, running: Running): Promise<string | undefined> {
  const shell = new Shell(running.scratch, running.env)
  let last: Ran | undefined
  try {
    for (const step of walkthrough.steps) {
      let command = step.command
      try {
        if (step.assignments) {
          const parts: string[] = []
          for (const assignment of step.assignments) {
            parts.push(
              assignment.placeholder
                ? `${assignment.name}=${shellQuote(await fill(assignment.placeholder, last, running, walkthrough.page))}`
                : `${assignment.name}=${assignment.value}`,
            )
          }
          command = parts.join('; ')
        }
      } catch (error) {
        return `${describeStep(step)}\n  ${(error as Error).message}`
      }
      command = rewrite(command, running)
      const started = Date.now()
      let ran = await shell.run(command)
      if (process.env.WALKTHROUGH_VERBOSE) {
        console.log(
          `${step.page}:${step.line} ${Date.now() - started} ms ${ran.status ?? ''} ${ran.output.slice(0, 120)}`,
        )
      }
      if (ran.exitCode !== 0) {
        return `${describeStep(step)}\n  exited ${ran.exitCode}: ${(ran.stderr || ran.output).trim().slice(0, 500)}`
      }
      if (step.promised) {
        const promised = await withVariables(step.promised, shell)
        let difference = broken(promised, ran)
        const deadline = Date.now() + READ_PATIENCE_MS
        while (difference && isRead(step.command) && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 250))
          ran = await shell.run(command)
          difference = broken(promised, ran)
        }
        if (difference) {
          return [
            describeStep(step),
            `  promised: → ${promised.text}`,
            `  answered: ${ran.status ?? ''} ${ran.output.trim().slice(0, 800)}`,
            `  difference: ${difference}`,
          ].join('\n')
        }
      }
      if (ran.output.trim()) last = ran
    }
    return undefined
  } finally {
    shell.close()
  }
}

export const IN_ORDER = WALKTHROUGH_PAGES
export const IN_REVERSE = [...WALKTHROUGH_PAGES].reverse()
/** The pages neither order starts with: each runs alone too, first on a fresh service of its own. */
export const ALONE = WALKTHROUGH_PAGES.filter((page) => page !== IN_ORDER[0] && page !== IN_REVERSE[0])
export { NOT_WALKTHROUGHS, pagesWithPromises, readWalkthroughs, root, WALKTHROUGH_PAGES }

/**
 * Runs of pages, each on a fresh service of its own, in the order a test file takes them: each
 * run's service is started while the run before it plays its pages (mostly waiting on the service
 * and the fakes), so that a fresh start adds little time. `stopAll` stops what was started ahead.
 */
export function freshServiceRuns(runs: readonly (readonly string[])[]) {
  const started = new Map<number, Promise<Running>>()
  const serviceFor = (run: number): Promise<Running> => {
    let service = started.get(run)
    if (!service) {
      service = startAll()
      service.catch(() => {}) // awaited by its run; one whose run is filtered out is stopped after all
      started.set(run, service)
    }
    return service
  }
  /** Runs the pages of `runs[run]` one after another; each failure names the pages run before it. */
  const run = async (index: number) => {
    const pages = runs[index] as readonly string[]
    const walkthroughs = new Map(readWalkthroughs(root).map((w) => [w.page, w]))
    const running = await serviceFor(index)
    started.delete(index)
    if (index + 1 < runs.length) void serviceFor(index + 1)
    const failures: string[] = []
    try {
      for (const page of pages) {
        const walkthrough = walkthroughs.get(page)
        if (!walkthrough) throw new Error(`no walkthrough ${page}`)
        const began = Date.now()
        const failure = await runPage(walkthrough, running)
        if (process.env.WALKTHROUGH_VERBOSE) console.log(`${page} in ${Date.now() - began} ms`)
        if (failure) {
          const before = pages.slice(0, pages.indexOf(page))
          failures.push(
            `${before.length ? `after ${before.join(', ')}` : 'first on a fresh service'}:\n${failure}`,
          )
        }
      }
      const dead = running.services.filter((service) => !service.running())
      if (dead.length) failures.push(dead.map((service) => serviceReport(service)).join('\n'))
    } finally {
      await running.stop()
    }
    expect(failures.join('\n\n'), `in the order ${pages.join(', ')}`).toBe('')
  }
  const stopAll = async () => {
    const left = [...started.values()]
    started.clear()
    await Promise.all(
      left.map((service) =>
        service.then(
          (running) => running.stop(),
          () => {},
        ),
      ),
    )
  }
  return { run, stopAll }
}
