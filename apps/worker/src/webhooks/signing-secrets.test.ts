import { randomBytes } from 'node:crypto'
import { createSecretBox, type SecretBox } from '@dispatch/runtime'
import { describe, expect, it } from 'vitest'
import { SigningSecrets } from './signing-secrets.ts'

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`
const newKey = () => randomBytes(32).toString('base64')

/** A box that counts how often it decrypts. */
function countingBox(box: SecretBox) {
  const counted = { opens: 0 }
  const wrapped: SecretBox = {
    seal: (plaintext) => box.seal(plaintext),
    open: (sealed) => {
      counted.opens++
      return box.open(sealed)
    },
    isStale: (sealed) => box.isStale(sealed),
  }
  return Object.assign(counted, { box: wrapped })
}

describe('SigningSecrets', () => {
  const box = createSecretBox({ APP_ENV: 'production', SECRETS_KEY: newKey() })

  it('opens a sealed secret once, then answers it from memory', () => {
    const counting = countingBox(box)
    const secrets = new SigningSecrets(counting.box)
    const secret = newSecret()
    const sealed = box.seal(secret)
    expect(secrets.open(sealed)).toBe(secret)
    expect(secrets.open(sealed)).toBe(secret)
    expect(counting.opens).toBe(1)
    // The same secret sealed again (a re-seal) is another string: opened once more.
    expect(secrets.open(box.seal(secret))).toBe(secret)
    expect(counting.opens).toBe(2)
  })

  it('takes a clear whsec_ secret (a row from before sealing) as it is', () => {
    const counting = countingBox(box)
    const secret = newSecret()
    expect(new SigningSecrets(counting.box).open(secret)).toBe(secret)
    expect(counting.opens).toBe(0)
  })

  it('throws, without quoting the value, on a value sealed under a key it lacks or altered', () => {
    const secrets = new SigningSecrets(box)
    const foreign = createSecretBox({ APP_ENV: 'production', SECRETS_KEY: newKey() }).seal(newSecret())
    expect(() => secrets.open(foreign)).toThrow(/key this process does not hold/)
    const parts = box.seal(newSecret()).split('.')
    const ciphertext = parts[4] ?? ''
    parts[4] = `${ciphertext.startsWith('A') ? 'B' : 'A'}${ciphertext.slice(1)}`
    const altered = parts.join('.')
    let message = ''
    try {
      secrets.open(altered)
    } catch (error) {
      message = (error as Error).message
    }
    expect(message).not.toBe('')
    expect(message).not.toContain(parts[4])
  })

  it('signs with the previous secret only during its overlap', () => {
    const secrets = new SigningSecrets(box)
    const current = newSecret()
    const previous = newSecret()
    const now = new Date()
    const endpoint = {
      secret: box.seal(current),
      previousSecret: previous,
      previousSecretExpiresAt: new Date(now.getTime() + 1000),
    }
    expect(secrets.of(endpoint, now)).toEqual([current, previous])
    expect(secrets.of(endpoint, new Date(now.getTime() + 1000))).toEqual([current])
    expect(secrets.of({ ...endpoint, previousSecret: null }, now)).toEqual([current])
    // An expired previous secret is not opened at all: a key it lacks does not stop the delivery.
    const lost = createSecretBox({ APP_ENV: 'production', SECRETS_KEY: newKey() }).seal(previous)
    expect(secrets.of({ ...endpoint, previousSecret: lost }, new Date(now.getTime() + 1000))).toEqual([
      current,
    ])
    expect(() => secrets.of({ ...endpoint, previousSecret: lost }, now)).toThrow()
  })
})
