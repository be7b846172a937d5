import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import Type from 'typebox'
import { ConfigError } from './env.ts'

/**
 * Secrets stored at rest (senders' access tokens, webhook signing secrets) are sealed with
 * AES-256-GCM under `SECRETS_KEY`: `v1.<key id>.<iv>.<tag>.<ciphertext>`, base64url parts, the key
 * id being the first 8 hex digits of the key's SHA-256. Opening picks the key by that id among `SECRETS_KEY` and `SECRETS_KEY_PREVIOUS`,
 * so a rotation is: new key in `SECRETS_KEY`, the old one in `SECRETS_KEY_PREVIOUS`, restart, run
 * `pnpm secrets:rotate` (re-seals every value under the new key), then drop the old key.
 */
export const secretsEnv = {
  /** 32 random bytes, base64 (`openssl rand -base64 32`). Required in production. */
  SECRETS_KEY: Type.Optional(Type.String({ minLength: 1 })),
  /** Keys being rotated out, comma-separated: still opened, never used to seal. */
  SECRETS_KEY_PREVIOUS: Type.Optional(Type.String({ minLength: 1 })),
}

/**
 * Outside production, a fixed development key, so `pnpm dev` and the tests need no setup. It is in
 * this repository, so it protects nothing: production refuses to start without its own.
 */
const DEVELOPMENT_KEY = Buffer.from('ZGlzcGF0Y2gtZGV2ZWxvcG1lbnQtb25seS1rZXkhISE=', 'base64')

/**
 * What production cannot run with: no `SECRETS_KEY`, or the development key above (anyone with this
 * repository opens what it seals). The development key may still be in `SECRETS_KEY_PREVIOUS`,
 * to be rotated out (docs/security.md).
 */
export function secretsKeyProblems(env: { APP_ENV: string; SECRETS_KEY?: string | undefined }): string[] {
  if (env.APP_ENV !== 'production') return []
  if (!env.SECRETS_KEY) return ['  SECRETS_KEY: required in production (openssl rand -base64 32)']
  if (Buffer.from(env.SECRETS_KEY.trim(), 'base64').equals(DEVELOPMENT_KEY)) {
    return [
      '  SECRETS_KEY: is the development key from the repository; production needs its own (openssl rand -base64 32)',
    ]
  }
  return []
}

export interface SecretBox {
  seal(plaintext: string): string
  /** Throws when the value was sealed under a key this box does not hold, or was altered. */
  open(sealed: string): string
  /** True when `sealed` is under an older key (`pnpm secrets:rotate` re-seals it). */
  isStale(sealed: string): boolean
}

const keyId = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 8)

function parseKey(name: string, value: string): Buffer {
  const key = Buffer.from(value.trim(), 'base64')
  if (key.length !== 32) {
    throw new ConfigError(
      `Invalid configuration:\n  ${name}: must be 32 bytes, base64 (openssl rand -base64 32)`,
    )
  }
  return key
}

/** The box a process's configuration describes; throws `ConfigError` on a malformed key. */
export function createSecretBox(env: {
  APP_ENV: string
  SECRETS_KEY?: string | undefined
  SECRETS_KEY_PREVIOUS?: string | undefined
}): SecretBox {
  if (!env.SECRETS_KEY && env.APP_ENV === 'production') {
    throw new ConfigError(
      'Invalid configuration:\n  SECRETS_KEY: required in production (openssl rand -base64 32)',
    )
  }
  const current = env.SECRETS_KEY ? parseKey('SECRETS_KEY', env.SECRETS_KEY) : DEVELOPMENT_KEY
  const keys = new Map([[keyId(current), current]])
  for (const old of env.SECRETS_KEY_PREVIOUS?.split(',').filter(Boolean) ?? []) {
    const key = parseKey('SECRETS_KEY_PREVIOUS', old)
    keys.set(keyId(key), key)
  }
  const currentId = keyId(current)
  return {
    seal(plaintext) {
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', current, iv)
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      const parts = [iv, cipher.getAuthTag(), ciphertext].map((b) => b.toString('base64url'))
      return ['v1', currentId, ...parts].join('.')
    },
    open(sealed) {
      const [version, id, iv, tag, ciphertext] = sealed.split('.')
      const key = id ? keys.get(id) : undefined
      if (version !== 'v1' || !key || iv === undefined || tag === undefined || ciphertext === undefined) {
        throw new Error(`A stored secret is sealed under a key this process does not hold (key id ${id})`)
      }
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
      decipher.setAuthTag(Buffer.from(tag, 'base64url'))
      return Buffer.concat([
        decipher.update(Buffer.from(ciphertext, 'base64url')),
        decipher.final(),
      ]).toString('utf8')
    },
    isStale: (sealed) => sealed.split('.')[1] !== currentId,
  }
}

/** What admins see of a token: its last four characters. */
export const lastFour = (secret: string) => secret.slice(-4)
