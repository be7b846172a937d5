import { hash, randomBytes } from 'node:crypto'
import type { AppEnv } from '@dispatch/contracts'

/** Keys carry their environment: `mdk_dev_…` in development, `mdk_prod_…` in production. */
export const keyPrefixFor = (env: AppEnv) => (env === 'production' ? 'mdk_prod_' : 'mdk_dev_')

/** A new secret key (192 random bits), its SHA-256 for lookups, and the prefix admins may see. */
export function generateApiKey(env: AppEnv) {
  const key = `${keyPrefixFor(env)}${randomBytes(24).toString('base64url')}`
  return { key, keyHash: hashApiKey(key), keyPrefix: key.slice(0, keyPrefixFor(env).length + 6) }
}

export const hashApiKey = (key: string) => hash('sha256', key, 'hex')
