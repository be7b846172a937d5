import { lookup as dnsLookup } from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'
import { isGlobalUnicast } from '@dispatch/runtime'
import { Agent } from 'undici'

export interface DestinationRules {
  /** Production takes https only; development also http. */
  production: boolean
  /** Whether loopback, private, link-local and metadata addresses may be reached (local development). */
  allowPrivate: boolean
}

/** Thrown (through the request) when a name resolves to an address the rules forbid. */
export class BlockedAddressError extends Error {
  readonly code = 'EWEBHOOKBLOCKED'
  constructor(address: string) {
    super(`blocked: ${address} is not a global unicast address (loopback, private, link-local or metadata)`)
  }
}

/**
 * Where a webhook URL may be sent, checked again at every delivery (the endpoint was checked at
 * registration, but its name may point elsewhere now). Returns the parsed URL, or why it is
 * refused. An IP literal is checked here, since Node connects to it without a lookup; a name is
 * checked by `guardedLookup` on the very addresses the socket then connects to, so a name that
 * answers a public address to one query and a private one to the next (DNS rebinding) gains nothing.
 */
export function checkDestination(raw: string, rules: DestinationRules): URL | string {
  const key = `${rules.production ? 'p' : 'd'}${rules.allowPrivate ? 'a' : 'b'} ${raw}`
  const known = checked.get(key)
  if (known !== undefined) return known
  const verdict = check(raw, rules)
  if (checked.size >= MAX_CHECKED) checked.clear()
  checked.set(key, verdict)
  return verdict
}

/**
 * Verdicts by rules and URL: an endpoint's deliveries check the same URL again and again (parsing
 * it was 1-2 µs a delivery). Only what the string alone decides is kept; names are still checked
 * at every connect. Bounded: cleared when it grows past the limit. The URLs are never changed.
 */
const checked = new Map<string, URL | string>()
const MAX_CHECKED = 10_000

function check(raw: string, rules: DestinationRules): URL | string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'invalid URL'
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `scheme ${url.protocol} is not allowed`
  if (url.protocol === 'http:' && rules.production) return 'https is required in production'
  if (url.username || url.password) return 'the URL must not carry credentials'
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  if (!rules.allowPrivate && isIP(host) !== 0 && !isGlobalUnicast(host))
    return new BlockedAddressError(host).message
  return url
}

/** `dns.lookup`, failing the connection when any address it finds is private. */
function guardedLookup(allowPrivate: boolean): LookupFunction {
  if (allowPrivate) return dnsLookup
  return (hostname, options, callback) => {
    dnsLookup(hostname, options, (error, address, family) => {
      if (error) return callback(error, address, family)
      // With `all` (Node's happy eyeballs asks for it) every candidate is checked, not just one.
      const found = Array.isArray(address) ? address.map((a) => a.address) : [address]
      const blocked = found.find((a) => !isGlobalUnicast(a))
      if (blocked !== undefined) return callback(new BlockedAddressError(blocked), '', family)
      callback(null, address, family)
    })
  }
}

const lookups = { public: guardedLookup(false), private: guardedLookup(true) } as const

/**
 * Keep-alive dispatchers shared by every delivery of the process (a pool of connections per origin).
 * Kept apart by rule: a connection opened where private addresses were allowed must never be handed
 * to a delivery where they are not. HTTP/1.1 only; the delivery's deadline bounds the connect.
 */
const sharedDispatchers = {
  public: dispatcherFor(false),
  private: dispatcherFor(true),
}

function dispatcherFor(allowPrivate: boolean): Agent {
  return new Agent({
    connect: {
      lookup: allowPrivate ? lookups.private : lookups.public,
      allowH2: false,
      timeout: 120_000,
    },
  })
}

export function sharedDispatcher(allowPrivate: boolean): Agent {
  return allowPrivate ? sharedDispatchers.private : sharedDispatchers.public
}
