import { describe, expect, it } from 'vitest'
import { classifyPlatformAnswer, classifyTransportFailure, parseRetryAfter } from './classify.ts'
import { bodyParameters } from './cloud-api-payload.ts'

describe('classifyPlatformAnswer', () => {
  it.each([
    [500, 1, 'retryable'],
    [500, 2, 'retryable'],
    [500, 131000, 'retryable'],
    [400, 131056, 'recipient-throttled'],
    [400, 131057, 'retryable'],
    [503, undefined, 'retryable'],
    [429, undefined, 'rate-limited'],
    [400, 130429, 'rate-limited'],
    [400, 100, 'permanent'],
    [400, 131008, 'permanent'],
    [400, 131026, 'permanent'],
    [400, 131047, 'permanent'],
    [400, 132000, 'permanent'],
    [400, 132001, 'permanent'],
    [404, undefined, 'permanent'],
    [401, 190, 'token-refused'],
    [401, undefined, 'token-refused'],
    // The code decides over the status: a transient code on a 4xx is still retried.
    [400, 131000, 'retryable'],
  ] as const)('HTTP %i with code %s is %s', (status, code, kind) => {
    expect(classifyPlatformAnswer(status, code, 'x', null).kind).toBe(kind)
  })

  it('names the error by its code, or by the status without one', () => {
    expect(classifyPlatformAnswer(400, 131026, 'Undeliverable', null).code).toBe('131026')
    expect(classifyPlatformAnswer(502, undefined, '', null).code).toBe('HTTP_502')
  })

  it('raises an alert for an expired token only', () => {
    expect(classifyPlatformAnswer(401, 190, 'expired', null).alert).toBe('platform-token-expired')
    expect(classifyPlatformAnswer(400, 100, 'bad', null).alert).toBeUndefined()
  })

  it('pauses for Retry-After, or a second without one', () => {
    expect(classifyPlatformAnswer(429, undefined, '', '7').retryAfterMs).toBe(7000)
    expect(classifyPlatformAnswer(429, 130429, '', null).retryAfterMs).toBe(1000)
  })
})

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates, and ignores nonsense', () => {
    expect(parseRetryAfter('2')).toBe(2000)
    const now = Date.parse('2026-11-22T10:00:00Z')
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:05 GMT', now)).toBe(5000)
    expect(parseRetryAfter('soon')).toBeUndefined()
    expect(parseRetryAfter(null)).toBeUndefined()
  })
})

describe('classifyTransportFailure', () => {
  it('retries timeouts and network errors', () => {
    const timeout = Object.assign(new Error('timed out'), { name: 'TimeoutError' })
    expect(classifyTransportFailure(timeout)).toMatchObject({ code: 'TIMEOUT', kind: 'retryable' })
    const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } })
    expect(classifyTransportFailure(refused)).toMatchObject({ code: 'NETWORK', kind: 'retryable' })
    expect(classifyTransportFailure(refused).message).toContain('ECONNREFUSED')
  })
})

describe('bodyParameters', () => {
  it('sends numeric names as positional parameters in numeric order', () => {
    expect(bodyParameters({ '10': 'j', '2': 'b', '1': 'a' })).toEqual([
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b' },
      { type: 'text', text: 'j' },
    ])
  })

  it('sends other names as named parameters, in the order given', () => {
    expect(bodyParameters({ first_name: 'Ana', order: 'BR-1' })).toEqual([
      { type: 'text', parameter_name: 'first_name', text: 'Ana' },
      { type: 'text', parameter_name: 'order', text: 'BR-1' },
    ])
  })
})
