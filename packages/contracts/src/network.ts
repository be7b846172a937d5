import { BlockList, isIP } from 'node:net'

/**
 * Addresses a webhook may not reach unless private targets are allowed: the service's own network.
 * Shared by the API (checked at registration) and the worker (checked again at every delivery).
 */
const blocked = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8], // unspecified ("this network")
  ['10.0.0.0', 8],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, the cloud metadata address 169.254.169.254 included
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4')
}
blocked.addAddress('::', 'ipv6')
blocked.addAddress('::1', 'ipv6')
blocked.addSubnet('fc00::', 7, 'ipv6') // unique local, AWS's metadata fd00:ec2::254 included
blocked.addSubnet('fe80::', 10, 'ipv6')

/** Whether an address is loopback, private, link-local, unspecified or a metadata address. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return true
  // IPv4-mapped IPv6 (::ffff:10.0.0.1) is checked against the IPv4 rules by BlockList itself.
  return blocked.check(address, family === 4 ? 'ipv4' : 'ipv6')
}
