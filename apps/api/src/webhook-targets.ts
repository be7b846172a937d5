import { lookup as dnsLookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { isGlobalUnicast } from '@dispatch/runtime'
import { AppError } from './errors.ts'

export type Lookup = (host: string) => Promise<string[]>

const systemLookup: Lookup = async (host) => (await dnsLookup(host, { all: true })).map((a) => a.address)

export interface TargetRules {
  /** Production takes https only; development also http. */
  production: boolean
  allowPrivate: boolean
  lookup?: Lookup
  /** How long a name may take to resolve before the URL is refused. Default 5 s. */
  lookupTimeoutMs?: number
}

const DEFAULT_LOOKUP_TIMEOUT_MS = 5000

/** The lookup, or a rejection once `ms` have passed: a slow resolver must not hold a request open. */
async function lookupWithin(lookup: Lookup, host: string, ms: number): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('lookup timed out')), ms)
  })
  try {
    return await Promise.race([lookup(host), timeout])
  } finally {
    clearTimeout(timer)
  }
}

const refuse = (why: string) => new AppError('VALIDATION_ERROR', `body.url ${why}`)

/**
 * Checks where a webhook endpoint points, at registration (and, later, before each delivery:
 * a name may resolve elsewhere by then). Throws `400 VALIDATION_ERROR` naming `body.url`.
 */
export async function checkWebhookTarget(raw: string, rules: TargetRules): Promise<void> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw refuse('must be an absolute URL')
  }
  const schemes = rules.production ? ['https:'] : ['https:', 'http:']
  if (!schemes.includes(url.protocol)) {
    throw refuse(rules.production ? 'must use https' : 'must use https or http')
  }
  if (url.username || url.password) throw refuse('must not carry credentials')
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  if (!host) throw refuse('must name a host')

  let addresses: string[]
  if (isIP(host)) {
    addresses = [host]
  } else {
    try {
      addresses = await lookupWithin(
        rules.lookup ?? systemLookup,
        host,
        rules.lookupTimeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS,
      )
    } catch {
      addresses = []
    }
    if (addresses.length === 0) throw refuse(`host ${JSON.stringify(host)} does not resolve`)
  }
  if (!rules.allowPrivate && !addresses.every(isGlobalUnicast)) {
    throw refuse(
      'must not point at an address that is not global unicast (loopback, private, link-local, shared, reserved, multicast or metadata)',
    )
  }
}
