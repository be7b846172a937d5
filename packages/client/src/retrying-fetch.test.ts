import { describe, expect, it } from 'vitest'
import { retryDelayMs, retryingFetch } from './retrying-fetch.ts'

const answer = (status: number, headers: Record<string, string> = {}) =>
  new Response('{}', { status, headers })

/** A fetch that answers from a script and records each request's Idempotency-Key. */
function scripted(...answers: Response[]) {
  const keys: (string | null)[] = []
  const fetch = async (request: Request) => {
    keys.push(request.headers.get('idempotency-key'))
    await request.text()
    return answers.shift() ?? answer(200)
  }
  const waits: number[] = []
  const sleep = async (ms: number) => {
    waits.push(ms)
  }
  return { keys, waits, options: { fetch, sleep, retries: 3, maxDelayMs: 30_000 } }
}

const send = (headers: Record<string, string> = {}) =>
  new Request('http://api.test/api/third-party/messages/send-text', {
    method: 'POST',
    headers,
    body: '{"phone":"+5511987654321","text":"hi"}',
  })

describe('retryingFetch', () => {
  it('retries 429 and 503 after their Retry-After, with one Idempotency-Key for every attempt', async () => {
    const s = scripted(answer(503, { 'retry-after': '1' }), answer(429, { 'retry-after': '2' }), answer(202))
    const response = await retryingFetch(s.options)(send())
    expect(response.status).toBe(202)
    expect(s.waits).toEqual([1000, 2000])
    expect(s.keys).toHaveLength(3)
    expect(s.keys[0]).toMatch(/^[0-9a-f-]{36}$/)
    expect(new Set(s.keys).size).toBe(1)
  })

  it("keeps the caller's Idempotency-Key", async () => {
    const s = scripted(answer(503, { 'retry-after': '0' }), answer(202))
    await retryingFetch(s.options)(send({ 'idempotency-key': 'order-42' }))
    expect(s.keys).toEqual(['order-42', 'order-42'])
  })

  it('stops after the retries allowed, and returns the last answer', async () => {
    const s = scripted(...[1, 2, 3, 4, 5].map(() => answer(503)))
    const response = await retryingFetch({ ...s.options, retries: 2 })(send())
    expect(response.status).toBe(503)
    expect(s.keys).toHaveLength(3)
    expect(s.waits).toEqual([500, 1000])
  })

  it('does not wait longer than maxDelayMs: such an answer is returned at once', async () => {
    const s = scripted(answer(429, { 'retry-after': '3600' }))
    const response = await retryingFetch(s.options)(send())
    expect(response.status).toBe(429)
    expect(s.waits).toEqual([])
  })

  it('retries nothing else, and gives no Idempotency-Key to reads and admin calls', async () => {
    const s = scripted(answer(500), answer(400))
    expect((await retryingFetch(s.options)(send())).status).toBe(500)
    const approve = new Request('http://api.test/api/admin/api-keys/x/approve', { method: 'POST' })
    expect((await retryingFetch(s.options)(approve)).status).toBe(400)
    expect(s.keys[1]).toBeNull()
  })

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2030-01-01T00:00:00Z')
    expect(retryDelayMs(answer(503, { 'retry-after': '7' }), 0, now)).toBe(7000)
    expect(retryDelayMs(answer(503, { 'retry-after': 'Tue, 01 Jan 2030 00:00:03 GMT' }), 0, now)).toBe(3000)
    expect(retryDelayMs(answer(503), 2, now)).toBe(2000)
  })
})
