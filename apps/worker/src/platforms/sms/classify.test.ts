import { describe, expect, it } from 'vitest'
import { classifySmsAnswer, classifySmsTransportFailure } from './classify.ts'

describe('classifySmsAnswer', () => {
  it.each([
    [429, 20429, 'rate-limited', true],
    [429, undefined, 'rate-limited', true],
    [401, 20003, 'credentials-refused', true],
    [403, undefined, 'credentials-refused', true],
    [400, 21211, 'permanent', true],
    [400, 21610, 'permanent', true],
    [404, 20404, 'permanent', true],
    // A 5xx may hide an SMS that was created: retryable in kind, but its outcome unknown.
    [500, undefined, 'retryable', false],
    [503, 20500, 'retryable', false],
  ] as const)('HTTP %i with code %s is %s (outcome known: %s)', (status, code, kind, known) => {
    expect(classifySmsAnswer(status, code, 'x', null)).toMatchObject({ kind, outcomeKnown: known })
  })

  it('names the error by its code, or by the status without one', () => {
    expect(classifySmsAnswer(400, 21211, "The 'To' number is not valid", null).code).toBe('21211')
    expect(classifySmsAnswer(502, undefined, '', null).code).toBe('HTTP_502')
  })

  it('waits for Retry-After, or a second without one', () => {
    expect(classifySmsAnswer(429, 20429, '', '3').retryAfterMs).toBe(3000)
    expect(classifySmsAnswer(429, undefined, '', null).retryAfterMs).toBe(1000)
  })
})

describe('classifySmsTransportFailure', () => {
  it('knows nothing went when the connection was refused', () => {
    const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } })
    expect(classifySmsTransportFailure(refused)).toMatchObject({ code: 'NETWORK', outcomeKnown: true })
  })

  it('does not know after a timeout or a connection lost midway', () => {
    const timeout = Object.assign(new Error('timed out'), { name: 'TimeoutError' })
    expect(classifySmsTransportFailure(timeout)).toMatchObject({ code: 'TIMEOUT', outcomeKnown: false })
    const reset = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } })
    expect(classifySmsTransportFailure(reset)).toMatchObject({ code: 'NETWORK', outcomeKnown: false })
  })
})
