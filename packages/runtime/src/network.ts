import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * Whether a webhook may reach `address`: only a global unicast address, as ipaddr.js names its
 * ranges (`range() === 'unicast'`), never loopback, private, link-local, shared (CGNAT),
 * benchmarking, reserved, multicast, broadcast or unspecified. An IPv4 address carried inside IPv6
 * is judged as that IPv4 address: mapped (`::ffff:a.b.c.d`), translated (`::ffff:0:a.b.c.d`),
 * NAT64 (`64:ff9b::a.b.c.d`), 6to4 (`2002:AABB:CCDD::`) and Teredo (server and client); the
 * deprecated IPv4-compatible form (`::a.b.c.d`) and the local-use NAT64 prefix `64:ff9b:1::/48`
 * are refused whatever they carry. Other IPv6 must also lie in 2000::/3, the only space IANA
 * allocates as global unicast. Anything that is not an IP literal is refused.
 *
 * The one decision for the API (at registration) and the worker (at every delivery, on the very
 * addresses DNS answered).
 */
export function isGlobalUnicast(address: string): boolean {
  if (isIP(address) === 0) return false
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.parse(address)
  } catch {
    return false
  }
  return parsed.kind() === 'ipv4' ? isGlobalV4(parsed as ipaddr.IPv4) : isGlobalV6(parsed as ipaddr.IPv6)
}

const isGlobalV4 = (address: ipaddr.IPv4) => address.range() === 'unicast'

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number]
const NAT64_LOCAL_USE = ipaddr.parseCIDR('64:ff9b:1::/48') as [ipaddr.IPv6, number]
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96') as [ipaddr.IPv6, number]

/** The IPv4 address in two 16-bit parts of an IPv6 address (`invert`: Teredo's obfuscated client). */
const v4Of = (high: number, low: number, invert = false) => {
  const h = invert ? ~high & 0xffff : high
  const l = invert ? ~low & 0xffff : low
  return new ipaddr.IPv4([h >> 8, h & 0xff, l >> 8, l & 0xff])
}

function isGlobalV6(address: ipaddr.IPv6): boolean {
  const p = address.parts as number[]
  switch (address.range()) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d
      return isGlobalV4(v4Of(p[6] as number, p[7] as number))
    case 'rfc6052': // NAT64: the well-known 64:ff9b::/96 carries a public IPv4 address in its last 32 bits
      if (address.match(NAT64_LOCAL_USE)) return false
      return isGlobalV4(v4Of(p[6] as number, p[7] as number))
    case '6to4': // 2002:AABB:CCDD::/48 is the 6to4 site of AA.BB.CC.DD
      return isGlobalV4(v4Of(p[1] as number, p[2] as number))
    case 'teredo': // 2001:0:SSSS:SSSS:flags:port:CCCC:CCCC, the client's address inverted
      return (
        isGlobalV4(v4Of(p[2] as number, p[3] as number)) &&
        isGlobalV4(v4Of(p[6] as number, p[7] as number, true))
      )
    case 'unicast':
      return !address.match(IPV4_COMPATIBLE) && address.match(GLOBAL_UNICAST_V6)
    default:
      return false
  }
}
