import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  send,
  storedMessages,
  type TestApp,
  type TestWorld,
  validSends,
} from '../helpers.ts'

let world: TestWorld
let app: TestApp
let queue: ReturnType<typeof storedMessages>
let key: string
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '100000' })
  queue = storedMessages(world)
  key = (await activeKey(app, { scopes: SEND_SCOPES })).key
})
afterAll(async () => {
  await queue.close()
  await app.close()
  await world.close()
})

let n = 0
const freshKey = () => `order-${process.pid}-${++n}`
const idem = (value: string) => ({ 'idempotency-key': value })

describe('Idempotency-Key on sends', () => {
  it('replays the first answer for the same key and body, and enqueues nothing more', async () => {
    const k = freshKey()
    const first = await send(app, 'send-text', key, validSends['send-text'], idem(k))
    expect(first.statusCode).toBe(202)
    expect(first.headers['idempotent-replayed']).toBeUndefined()
    const before = await queue.count()

    const again = await send(app, 'send-text', key, validSends['send-text'], idem(k))
    expect(again.statusCode).toBe(202)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.json()).toEqual(first.json())
    expect(await queue.count()).toBe(before)
  })

  it('treats the same body with its keys in another order as the same request', async () => {
    const k = freshKey()
    const first = await send(
      app,
      'send-image',
      key,
      { phone: '+14155550123', image: { mediaId: 'm', text: 'c' } },
      idem(k),
    )
    const again = await send(
      app,
      'send-image',
      key,
      { image: { text: 'c', mediaId: 'm' }, phone: '+14155550123' },
      idem(k),
    )
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.json().messageId).toBe(first.json().messageId)
  })

  it('422 IDEMPOTENCY_KEY_REUSED for the same key with another body or on another endpoint', async () => {
    const k = freshKey()
    expect((await send(app, 'send-text', key, validSends['send-text'], idem(k))).statusCode).toBe(202)
    const other = { ...validSends['send-text'], text: 'a different text' }
    expectError(await send(app, 'send-text', key, other, idem(k)), 422, 'IDEMPOTENCY_KEY_REUSED')
    expectError(
      await send(app, 'send-image', key, validSends['send-image'], idem(k)),
      422,
      'IDEMPOTENCY_KEY_REUSED',
    )
  })

  it('concurrent duplicates: exactly one job; the others are told to retry or get the replay', async () => {
    const k = freshKey()
    const before = await queue.count()
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => send(app, 'send-template', key, validSends['send-template'], idem(k))),
    )
    const accepted = answers.filter((res) => res.statusCode === 202)
    const inFlight = answers.filter((res) => res.statusCode === 409)
    expect(accepted.length + inFlight.length).toBe(answers.length)
    expect(new Set(accepted.map((res) => res.json().messageId)).size).toBe(1)
    expect(accepted.filter((res) => res.headers['idempotent-replayed'] !== 'true')).toHaveLength(1)
    for (const res of inFlight) {
      expectError(res, 409, 'IDEMPOTENCY_REQUEST_IN_PROGRESS')
      expect(res.headers['retry-after']).toBe('1')
    }
    expect(await queue.count()).toBe(before + 1)
  })

  it('belongs to one API key: another key using the same value sends its own message', async () => {
    const k = freshKey()
    const other = (await activeKey(app, { scopes: SEND_SCOPES })).key
    const mine = await send(app, 'send-text', key, validSends['send-text'], idem(k))
    const theirs = await send(app, 'send-text', other, validSends['send-text'], idem(k))
    expect(theirs.statusCode).toBe(202)
    expect(theirs.headers['idempotent-replayed']).toBeUndefined()
    expect(theirs.json().messageId).not.toBe(mine.json().messageId)
  })

  it('a refused request does not use up the key: fixed and resent, it is accepted', async () => {
    const k = freshKey()
    expectError(
      await send(app, 'send-text', key, { phone: 'bad', text: 'x' }, idem(k)),
      400,
      'VALIDATION_ERROR',
    )
    const res = await send(app, 'send-text', key, validSends['send-text'], idem(k))
    expect(res.statusCode).toBe(202)
    expect(res.headers['idempotent-replayed']).toBeUndefined()
  })

  it('400 for a key longer than 255 characters or with spaces', async () => {
    expectError(
      await send(app, 'send-text', key, validSends['send-text'], idem('k'.repeat(256))),
      400,
      'VALIDATION_ERROR',
      /idempotency-key/,
    )
    expectError(
      await send(app, 'send-text', key, validSends['send-text'], idem('two words')),
      400,
      'VALIDATION_ERROR',
    )
    expect(
      (await send(app, 'send-text', key, validSends['send-text'], idem('k'.repeat(255)))).statusCode,
    ).toBe(202)
  })
})

describe('per-key rate limit', () => {
  it('429 RATE_LIMITED with Retry-After past the limit, shared by the three sends and by every API instance', async () => {
    const limited = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '4' })
    const second = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '4' })
    try {
      const k = (await activeKey(limited, { scopes: SEND_SCOPES })).key
      const other = (await activeKey(limited, { scopes: SEND_SCOPES })).key
      const answers = [
        await send(limited, 'send-text', k),
        await send(second, 'send-image', k),
        await send(limited, 'send-template', k),
        await send(second, 'send-text', k),
        await send(limited, 'send-text', k),
        await send(second, 'send-image', k),
      ]
      const codes = answers.map((res) => res.statusCode)
      // A window boundary may fall inside the burst; at most 4 pass per window, and some are refused.
      expect(codes.filter((code) => code === 202).length).toBeLessThanOrEqual(5)
      const refused = answers.filter((res) => res.statusCode === 429)
      expect(refused.length).toBeGreaterThan(0)
      for (const res of refused) {
        expectError(res, 429, 'RATE_LIMITED')
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      }
      // Another key has its own allowance.
      expect((await send(limited, 'send-text', other)).statusCode).toBe(202)
    } finally {
      await limited.close()
      await second.close()
    }
  })
})
