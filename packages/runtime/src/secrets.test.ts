import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { ConfigError } from './env.ts'
import { createSecretBox, lastFour } from './secrets.ts'

const newKey = () => randomBytes(32).toString('base64')
const TOKEN = 'EAAGm0PX4ZCpsBA-a-token-of-the-graph-api'

describe('the secret box', () => {
  it('seals to something that is not the secret, and opens it again', () => {
    const box = createSecretBox({ APP_ENV: 'production', SECRETS_KEY: newKey() })
    const sealed = box.seal(TOKEN)
    expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\.[\w-]+\.[\w-]+\.[\w-]+$/)
    expect(sealed).not.toContain(TOKEN)
    expect(box.open(sealed)).toBe(TOKEN)
    // A fresh IV each time: the same secret never seals to the same value twice.
    expect(box.seal(TOKEN)).not.toBe(sealed)
  })

  it('refuses a value that was altered, in any part', () => {
    const box = createSecretBox({ APP_ENV: 'development', SECRETS_KEY: newKey() })
    const parts = box.seal(TOKEN).split('.')
    for (const at of [2, 3, 4]) {
      const altered = [...parts]
      const part = altered[at] ?? ''
      // The first character: the last may carry only padding bits, which decoding ignores.
      altered[at] = `${part.startsWith('A') ? 'B' : 'A'}${part.slice(1)}`
      expect(() => box.open(altered.join('.')), `part ${at}`).toThrow()
    }
    expect(() => box.open('not a sealed value')).toThrow()
  })

  it('opens values sealed under a key named in SECRETS_KEY_PREVIOUS, and says they are stale', () => {
    const oldKey = newKey()
    const sealedBefore = createSecretBox({ APP_ENV: 'production', SECRETS_KEY: oldKey }).seal(TOKEN)
    const rotated = createSecretBox({
      APP_ENV: 'production',
      SECRETS_KEY: newKey(),
      SECRETS_KEY_PREVIOUS: `${newKey()},${oldKey}`,
    })
    expect(rotated.open(sealedBefore)).toBe(TOKEN)
    expect(rotated.isStale(sealedBefore)).toBe(true)
    const resealed = rotated.seal(rotated.open(sealedBefore))
    expect(rotated.isStale(resealed)).toBe(false)
  })

  it('cannot open a value sealed under a key it does not hold', () => {
    const sealed = createSecretBox({ APP_ENV: 'production', SECRETS_KEY: newKey() }).seal(TOKEN)
    const other = createSecretBox({ APP_ENV: 'production', SECRETS_KEY: newKey() })
    expect(() => other.open(sealed)).toThrow(/key this process does not hold/)
  })

  it('uses a development key outside production, and refuses production without SECRETS_KEY', () => {
    const dev = createSecretBox({ APP_ENV: 'development' })
    expect(dev.open(dev.seal(TOKEN))).toBe(TOKEN)
    // The development key is one fixed key: another development process opens what this one sealed.
    expect(createSecretBox({ APP_ENV: 'development' }).open(dev.seal(TOKEN))).toBe(TOKEN)
    expect(() => createSecretBox({ APP_ENV: 'production' })).toThrow(ConfigError)
    expect(() => createSecretBox({ APP_ENV: 'production' })).toThrow(/SECRETS_KEY: required in production/)
  })

  it('refuses a key that is not 32 bytes, naming the variable and never echoing the value', () => {
    const short = randomBytes(16).toString('base64')
    for (const [env, name] of [
      [{ SECRETS_KEY: short }, 'SECRETS_KEY'],
      [{ SECRETS_KEY: randomBytes(33).toString('base64') }, 'SECRETS_KEY'],
      [{ SECRETS_KEY: newKey(), SECRETS_KEY_PREVIOUS: short }, 'SECRETS_KEY_PREVIOUS'],
    ] as const) {
      let thrown: unknown
      try {
        createSecretBox({ APP_ENV: 'development', ...env })
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(ConfigError)
      expect((thrown as Error).message).toContain(`${name}: must be 32 bytes`)
      expect((thrown as Error).message).not.toContain(short)
    }
  })

  it('shows admins the last four characters only', () => {
    expect(lastFour(TOKEN)).toBe('-api')
  })
})
