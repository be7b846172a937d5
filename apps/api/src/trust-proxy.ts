import { isIP } from 'node:net'
import { ConfigError } from '@dispatch/runtime/env'

/**
 * Which proxies in front of the API Fastify believes about the client's address (`trustProxy`):
 * none (`false`), or the proxies at these addresses or CIDRs. The client's address is then the
 * first one, walking `X-Forwarded-For` from the right, that is not a trusted proxy's: what a client
 * writes on the left is never reached. Never `true`, which believes the leftmost entry a client
 * wrote itself, so every per-address limit (admin and key guessing, key requests) could be walked
 * around by changing it. Or a hop count: the nearest N addresses (the socket's peer, then
 * `X-Forwarded-For` from the right) are proxies whatever they are, for a chain of known length
 * whose addresses are not known. Fastify takes it as a function: given a number, the version we
 * run trusts nothing at all.
 */
export type TrustProxy = false | string[] | ((address: string, hop: number) => boolean)

/** proxy-addr's names for whole ranges, which Fastify accepts in the list too. */
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal'])

const refused = (why: string) => new ConfigError(`Invalid configuration:\n  TRUST_PROXY: ${why}`)

function isAddressOrCidr(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  if (!/^[0-9]{1,3}$/.test(prefix)) return false
  return Number(prefix) <= (family === 4 ? 32 : 128)
}

/**
 * `TRUST_PROXY`: unset, empty, `false` or `0` trusts no proxy; otherwise a comma-separated list of
 * the proxies' addresses or CIDRs (`10.0.0.0/8,fd00::/8`, proxy-addr's names `loopback`,
 * `linklocal`, `uniquelocal` too), or a hop count (`1`: one proxy in front). `true` is refused,
 * saying why.
 */
export function parseTrustProxy(raw: string | undefined): TrustProxy {
  const value = raw?.trim() ?? ''
  if (value === '' || value === 'false' || value === '0') return false
  if (value === 'true') {
    throw refused(
      'true would believe the X-Forwarded-For a client writes itself, so anyone could choose the ' +
        'address the per-address limits count; give the addresses/CIDRs of the proxies in front ' +
        'of the API, comma-separated (in Kubernetes, the pod network the ingress runs in)',
    )
  }
  if (/^[0-9]{1,2}$/.test(value)) {
    const hops = Number(value)
    return (_address, hop) => hop < hops
  }
  const entries = value.split(',').map((entry) => entry.trim())
  const bad = entries.filter((entry) => !isAddressOrCidr(entry))
  if (bad.length > 0) {
    throw refused(
      `${bad.map((entry) => JSON.stringify(entry)).join(', ')} is not a hop count, an IP address or a CIDR`,
    )
  }
  return entries
}
