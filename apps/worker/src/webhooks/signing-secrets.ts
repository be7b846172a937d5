import type { SecretBox } from '@dispatch/runtime'

/** What a sealed value starts with (`packages/runtime/src/secrets.ts`); a `whsec_…` never does. */
const SEALED_PREFIX = 'v1.'
/** Bounded: cleared when it grows past the limit, as the signing keys in `sign.ts` are. */
const MAX_OPENED = 10_000

/** The endpoint fields a delivery is signed from. */
export interface StoredSigningSecrets {
  secret: string
  previousSecret: string | null
  previousSecretExpiresAt: Date | null
}

/**
 * Opens the signing secrets stored in `webhook_endpoints`, sealed under `SECRETS_KEY`. A row from
 * before they were sealed holds a clear `whsec_…`: it is taken as it is until `pnpm secrets:rotate`
 * seals it. Opened values are kept by their sealed string (a new secret is a new string), so a
 * delivery decrypts nothing once its endpoint has been seen.
 */
export class SigningSecrets {
  readonly #box: SecretBox
  readonly #opened = new Map<string, string>()

  constructor(box: SecretBox) {
    this.#box = box
  }

  /** Throws (without quoting the value) when it is sealed under a key the box lacks, or altered. */
  open(stored: string): string {
    if (!stored.startsWith(SEALED_PREFIX)) return stored
    const known = this.#opened.get(stored)
    if (known !== undefined) return known
    const secret = this.#box.open(stored)
    if (this.#opened.size >= MAX_OPENED) this.#opened.clear()
    this.#opened.set(stored, secret)
    return secret
  }

  /** The secrets that sign at `at`: the current one, and the previous one during its overlap. */
  of(endpoint: StoredSigningSecrets, at: Date): string[] {
    const secrets = [this.open(endpoint.secret)]
    if (endpoint.previousSecret && (endpoint.previousSecretExpiresAt?.getTime() ?? 0) > at.getTime()) {
      secrets.push(this.open(endpoint.previousSecret))
    }
    return secrets
  }
}
