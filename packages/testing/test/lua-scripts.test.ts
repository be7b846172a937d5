import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  defineLuaCommand,
  evalLuaScript,
  type LuaEvaluator,
  type LuaScript,
  readLuaScript,
} from '@dispatch/runtime/lua-scripts'
import { Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testQueuePrefix, testRedisUrl } from '../src/database.ts'
import { type LocalRedisCluster, redisClusterMissing, startRedisCluster } from '../src/redis-cluster.ts'

/**
 * Every Lua script of the repository (each `.lua` under a `lua/` folder of apps/* or packages/*,
 * includes aside): its file names the keys it takes and it touches no other, and it runs on Redis
 * and on a Redis Cluster, by SHA as a defined command and by EVAL.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '../../..')

function scriptFiles(dir: string, inLua = false): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (entry.name === 'node_modules' || entry.name === 'includes') return []
      return scriptFiles(path, inLua || entry.name === 'lua')
    }
    return inLua && entry.name.endsWith('.lua') ? [path] : []
  })
}

const scripts: LuaScript[] = ['apps', 'packages'].flatMap((top) =>
  readdirSync(join(root, top)).flatMap((name) => {
    const src = join(root, top, name, 'src')
    try {
      return scriptFiles(src).map((file) => readLuaScript(file))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw error
    }
  }),
)
const where = (script: LuaScript) => relative(root, script.file).split(sep).join('/')

/**
 * Scripts that name keys themselves rather than take them all as KEYS, and why: each may touch
 * keys built (by `base ..`) from the one ARGV named here, through the local names listed.
 */
const BUILDS_KEYS: Record<string, { base: string; names: string[]; why: string }> = {
  fairEnqueue: {
    base: 'ARGV[1]',
    names: ['base', 'k'],
    why:
      "which keys' lists and scheduled sets a call touches is known only inside it (the messages' " +
      "apiKeyIds and levels); all share the sender's {…} hash tag, so one slot",
  },
  fairAdmit: {
    base: 'ARGV[4]',
    names: ['base', 'ring', 'list', 'pace', 'plainKey'],
    why:
      "which keys a tick visits is read from the rings inside the call; all share the sender's {…} " +
      "hash tag, as its queue's keys do, so one slot",
  },
}
/** Scripts of any number of keys (no count in the file name), and why. */
const ANY_NUMBER_OF_KEYS: Record<string, string> = {
  checkMarketingConsent: 'one pair of keys per marketing message of a turn, gathered into one call',
  releaseClaims: 'the claims of a batch of recorded outcomes, released in one call',
  reachBesideClaim:
    "a window key per delivery of a turn to one portfolio, then the portfolio's reach and its recent list (one server only)",
  setEach:
    'a string per write of a turn (sticky records, 131026 holds), set in one call (on a Cluster only keys of one {…} tag)',
}

/** Commands that take no key, and those whose second argument is a key too. */
const KEYLESS = new Set(['TIME'])
const TWO_KEYS = new Set(['LMOVE', 'RPOPLPUSH', 'SMOVE', 'RENAME', 'COPY'])

/** The arguments after a call's command name, from `at` (just past it) to its closing parenthesis. */
function callArguments(lua: string, at: number): string[] {
  const args: string[] = []
  let depth = 0
  let current = ''
  for (const char of lua.slice(at)) {
    if (depth === 0 && (char === ',' || char === ')')) {
      if (current.trim()) args.push(current.trim())
      current = ''
      if (char === ')') break
      continue
    }
    if (char === '(' || char === '{' || char === '[') depth++
    if (char === ')' || char === '}' || char === ']') depth--
    current += char
  }
  return args
}

describe('each script file', () => {
  it('is found', () => {
    expect(scripts.length).toBeGreaterThan(10)
    expect(new Set(scripts.map((s) => s.name)).size).toBe(scripts.length)
  })

  it.each(scripts.map((s) => [where(s), s] as const))(
    '%s: its name states the highest KEYS[n] it uses',
    (_, s) => {
      const used = [...s.lua.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1]))
      if (s.numberOfKeys === undefined) {
        expect(ANY_NUMBER_OF_KEYS[s.name], `${where(s)} takes any number of keys: say why here`).toBeDefined()
        expect(used, 'a script of any number of keys reads them by #KEYS, not by a fixed index').toEqual([])
        expect(s.lua).toContain('#KEYS')
      } else {
        expect(Math.max(0, ...used)).toBe(s.numberOfKeys)
      }
    },
  )

  it.each(scripts.map((s) => [where(s), s] as const))('%s: touches no key outside KEYS', (_, s) => {
    const built = BUILDS_KEYS[s.name]
    const allowed = (arg: string) =>
      /^KEYS\[[^\]]+\]$/.test(arg) ||
      // A run of the keys themselves (`unpack(KEYS, 1, n)`).
      /^unpack\(KEYS[,)]/.test(arg) ||
      built?.names.some((name) => new RegExp(`^${name}( \\.\\.|$)`).test(arg)) === true
    const outside: string[] = []
    for (const call of s.lua.matchAll(/redis\.p?call\('(\w+)'/g)) {
      const command = (call[1] as string).toUpperCase()
      const args = callArguments(s.lua, (call.index as number) + call[0].length)
      if (KEYLESS.has(command)) continue
      const keys = TWO_KEYS.has(command) ? args.slice(0, 2) : args.slice(0, 1)
      if (keys.length === 0) outside.push(`${command} without a key`)
      for (const key of keys) if (!allowed(key)) outside.push(`${command} ${key}`)
    }
    expect(outside).toEqual([])
    if (built) {
      // The names it builds keys with all come from the one ARGV listed.
      expect(s.lua).toMatch(new RegExp(`local base = ${built.base.replace(/[[\]]/g, '\\$&')}$`, 'm'))
      for (const name of built.names.filter((n) => n !== 'base')) {
        expect(s.lua, `${name} is built from base`).toMatch(
          new RegExp(`local ${name}\\b[^=\\n]*= base \\.\\.`),
        )
      }
    }
  })

  it('lists no exception for a script that no longer exists', () => {
    const names = new Set(scripts.map((s) => s.name))
    for (const name of [...Object.keys(BUILDS_KEYS), ...Object.keys(ANY_NUMBER_OF_KEYS)]) {
      expect(names.has(name), name).toBe(true)
    }
  })
})

/**
 * One run of each script, in this order, on keys of one hash tag: keys and arguments (the number of
 * keys first for a script of any number) and what it answers. The fair-queue runs follow one
 * sender: two messages stored, one taken while waiting, the other admitted.
 */
type Run = {
  keys: (k: (name: string) => string) => string[]
  args: (k: (name: string) => string, now: number) => Array<string | number>
  before?: (redis: Redis | Cluster, k: (name: string) => string) => Promise<unknown>
  answers: unknown
}
const JOB = JSON.stringify({ messageId: 'm1', apiKeyId: 'key-1', priority: 'normal' })
const fair = ['jobs', 'moving', 'moving-at', 'scheduled']
const RUNS: Record<string, Run> = {
  countAuthFailure: { keys: (k) => [k('auth')], args: () => ['1', 5, 60_000], answers: [0, 1] },
  refundAuthFailure: { keys: (k) => [k('auth')], args: () => [], answers: 0 },
  spendMessageRate: {
    keys: (k) => [k('usage'), k('quota')],
    args: (_, now) => [10, 1000, -1, now + 86_400_000, now, 1],
    answers: [1, 0],
  },
  // A quota of 5, 3 wanted: all 3 granted (whatever spendMessageRate above counted on the day).
  spendDailyQuota: {
    keys: (k) => [k('usage'), k('quota')],
    args: (_, now) => [5, now + 86_400_000, 3],
    answers: 3,
  },
  spendWebhookManualRetry: { keys: (k) => [k('retries')], args: () => [3, 3_600_000], answers: 0 },
  startWebhookReplay: { keys: (k) => [k('replays')], args: (_, now) => [2, now, 600_000, 'tag'], answers: 1 },
  acquireWebhookEndpoint: {
    keys: (k) => [k('leases'), k('rate'), k('pause')],
    args: () => [2, 10, 30_000, 1, 'lease-1'],
    answers: [1, 0, 'ok'],
  },
  slowDownWebhookEndpoint: { keys: (k) => [k('pause')], args: () => [1000], answers: 1000 },
  setEach: {
    keys: (k) => [k('sticky:a'), k('hold:m2')],
    args: () => [60_000, 'sender-a 0', '{"messageId":"m2"}'],
    answers: 2,
  },
  fairEnqueue: {
    keys: (k) => [k('fair:jobs'), k('fair:scheduled')],
    args: (k, now) => [k('fair:'), 0, now, 'm1', JOB, 'normal', 'key-1', 0, 'm2', JOB, 'normal', 'key-1', 0],
    answers: [],
  },
  takeWaitingMessage: {
    keys: (k) => [k('fair:jobs'), k('fair:scheduled'), k('fair:moving'), k('fair:moving-at')],
    args: (_, now) => ['m2', now],
    answers: JOB,
  },
  fairAdmit: {
    keys: (k) => [
      ...fair.map((name) => k(`fair:${name}`)),
      ...['wait', 'prioritized', 'meta', 'limiter'].map(k),
    ],
    args: (k, now) => [now, 10, 10, k('fair:'), 60_000, 100],
    // Work left: m2, taken above, waits in moving until its outcome is recorded.
    answers: [1, 1, 0, 0, 'm1', JOB],
  },
  writeOptOut: { keys: (k) => [k('optout')], args: () => ['', 'all'], answers: 'all' },
  noteOptOutNumber: {
    keys: (k) => [k('optout:numbers')],
    args: () => ['1055502'],
    // Not listed by `10555021`, which starts with it: added.
    before: (redis, k) => redis.set(k('optout:numbers'), '10555021 '),
    answers: 1,
  },
  checkMarketingConsent: {
    keys: (k) => [k('optout'), k('cap')],
    args: () => [3, 60_000, 'tenant:acme'],
    answers: ['all'],
  },
  releaseClaims: {
    keys: (k) => [k('claim:m1'), k('claim:m2')],
    args: () => [60_000],
    before: async (redis, k) => {
      await redis.set(k('claim:m1'), 'worker', 'PX', 86_400_000)
    },
    // m2 has no claim left to release.
    answers: 1,
  },
  // A bundle's claim renamed after the job that takes its message over.
  handOverClaim: {
    keys: (k) => [k('claim:m1')],
    args: () => ['moved-to-b', 86_400_000, 'bundle-1'],
    before: async (redis, k) => {
      await redis.set(k('claim:m1'), 'bundle-1', 'PX', 86_400_000)
    },
    answers: 1,
  },
  recordServiceWindow: { keys: (k) => [k('window')], args: (_, now) => [now, now + 1000, now], answers: 1 },
  // A portfolio with a limit of 1: the first recipient counted, reached once more, the next one held.
  reachPortfolio: {
    keys: (k) => [k('reach'), k('reach:recent')],
    args: (_, now) => [now, 60_000, 1, 'hmac:a', 'hmac:a', 'hmac:b'],
    answers: [0, 0, expect.any(Number)],
  },
  // Read after reachPortfolio above: one recipient counted (a), one not (b).
  peekReach: {
    keys: (k) => [k('reach'), k('reach:recent')],
    args: (_, now) => [now - 60_000, 60_000, 1, 'hmac:a', 'hmac:b'],
    answers: [1, expect.any(Number), expect.any(Number), 0],
  },
  // A limit of 2 now, near enough to count exactly: the recipient of the window recorded above is
  // inside it (-its last message), one without a window is added (1), then reached before (0).
  reachBesideClaim: {
    keys: (k) => [k('window'), k('window:c'), k('window:c'), k('reach'), k('reach:recent')],
    args: (_, now) => [now, 60_000, 2, 86_400_000, 'hmac:w', 'hmac:c', 'hmac:c'],
    answers: [expect.any(Number), 1, 0],
  },
  // The one added above, given back (counted at `now`, not reached since).
  giveBackReach: {
    keys: (k) => [k('reach'), k('reach:recent')],
    args: (_, now) => [now, 'hmac:c'],
    answers: 1,
  },
  // The reach left: the one counted by reachPortfolio above, and nothing waiting in the list.
  readReach: {
    keys: (k) => [k('reach'), k('reach:recent')],
    args: (_, now) => [now, 60_000, 0],
    answers: [1, expect.any(Number), 0],
  },
  releaseLock: {
    keys: (k) => [k('lock')],
    args: () => ['token'],
    before: (redis, k) => redis.set(k('lock'), 'token'),
    answers: 1,
  },
}

it('every script has a run below, and every run a script', () => {
  expect(Object.keys(RUNS).sort()).toEqual(scripts.map((s) => s.name).sort())
})

const clusterMissing = redisClusterMissing()
let cluster: LocalRedisCluster | undefined
const clients: Array<Redis | Cluster> = []
beforeAll(async () => {
  if (!clusterMissing) cluster = await startRedisCluster()
}, 120_000)
afterAll(async () => {
  for (const client of clients) client.disconnect()
  await cluster?.stop()
})

/** Runs every script once on `redis`, by SHA (`defined`) or by EVAL, checking each answer. */
async function runAll(redis: Redis | Cluster, by: 'defined' | 'eval') {
  clients.push(redis)
  const tag = `${testQueuePrefix()}:lua:{${by}}:`
  const k = (name: string) => `${tag}${name}`
  const now = Date.now()
  const ordered = Object.keys(RUNS).map((name) => scripts.find((s) => s.name === name) as LuaScript)
  for (const script of ordered) {
    const run = RUNS[script.name] as Run
    await run.before?.(redis, k)
    const keys = run.keys(k)
    const call = [...(script.numberOfKeys === undefined ? [keys.length] : []), ...keys, ...run.args(k, now)]
    const answer =
      by === 'defined'
        ? await defineLuaCommand(redis, script)(...call)
        : await evalLuaScript(redis as unknown as LuaEvaluator, script, ...call)
    expect(answer, script.name).toEqual(run.answers)
  }
}

describe('on Redis', () => {
  it('runs each script as a defined command (EVALSHA)', () => runAll(new Redis(testRedisUrl()), 'defined'))
  it('runs each script by EVAL', () => runAll(new Redis(testRedisUrl()), 'eval'))

  it('runs a script defined while an auto-pipeline waits to be sent, in the same pipeline', async () => {
    // ioredis copies a client's commands into each pipeline when it makes it: a script defined
    // after another command opened this tick's auto-pipeline was not on it, and its call failed
    // (`pipeline[functionName] is not a function`) and crashed the process when the pipeline
    // answered (`results[i] is not iterable`), as a worker's first count of a turn once did.
    const redis = new Redis(testRedisUrl(), { enableAutoPipelining: true })
    clients.push(redis)
    const key = `${testQueuePrefix()}:lua:late`
    const dir = mkdtempSync(join(tmpdir(), 'lua-late-'))
    writeFileSync(join(dir, 'lateDefined-1.lua'), "return redis.call('INCR', KEYS[1])\n")
    const script = readLuaScript(join(dir, 'lateDefined-1.lua'))
    rmSync(dir, { recursive: true })
    const first = redis.set(key, '41')
    const late = defineLuaCommand(redis, script)(key)
    await expect(Promise.all([first, late])).resolves.toEqual(['OK', 42])
    await redis.del(key)
  })
})

describe.skipIf(clusterMissing)(
  `on a Redis Cluster${clusterMissing ? ` (skipped: ${clusterMissing})` : ''}`,
  () => {
    const connect = () => new Cluster([{ host: '127.0.0.1', port: cluster?.ports[0] as number }])
    it('runs each script as a defined command (EVALSHA)', () => runAll(connect(), 'defined'))
    it('runs each script by EVAL', () => runAll(connect(), 'eval'))
  },
)
