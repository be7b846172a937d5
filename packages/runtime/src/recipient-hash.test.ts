import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { hmacSha256, recipientHasher } from './recipient-hash.ts'

describe('hmacSha256', () => {
  it.each([
    ['an ASCII key', 'dispatch-development-only-erasure-hash-key'],
    ['a base64 key', 'q4Zs0cJ3m2Yt8xH1lR9vWb7NfK5pE6uA0dT2gS4iLoM='],
    ['a key past one block', 'k'.repeat(100)],
    ['a non-ASCII key', 'clé-secrète-é'],
  ])('gives what createHmac gives, with %s', (_, key) => {
    for (const message of ['+5511987654321', 'US.13491208655302741918', 'ünïcödé', '']) {
      expect(hmacSha256(key)(message)).toBe(createHmac('sha256', key).update(message).digest('base64url'))
    }
  })

  it('keys a recipient once: a hash given again is answered as it is', () => {
    const hash = recipientHasher({})
    const hashed = hash('+5511987654321')
    expect(hashed).toMatch(/^hmac:[A-Za-z0-9_-]{43}$/)
    expect(hash(hashed)).toBe(hashed)
    expect(recipientHasher({ ERASURE_HASH_KEY: 'x'.repeat(32) })('+5511987654321')).not.toBe(hashed)
  })
})
