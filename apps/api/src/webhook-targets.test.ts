import { isGlobalUnicast } from '@dispatch/runtime'
import { describe, expect, it } from 'vitest'
import { checkWebhookTarget } from './webhook-targets.ts'

const production = (addresses: string[]) => ({
  production: true,
  allowPrivate: false,
  lookup: async () => addresses,
})

describe('webhook targets', () => {
  // Every address that is not global unicast, IPv4 carried inside IPv6 included (issue 41's list,
  // then the ones tested before it). Each is refused as a literal in the URL and as a DNS answer.
  const refused = [
    '100.64.0.1', // shared address space (carrier-grade NAT)
    '198.18.0.1', // benchmarking
    '192.0.0.1', // IETF protocol assignments
    '224.0.0.1', // multicast
    '240.0.0.1', // reserved
    '255.255.255.255', // broadcast
    '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254
    '64:ff9b:1::a00:1', // local-use NAT64 (of 10.0.0.1)
    '2002:a9fe:a9fe::1', // 6to4 of 169.254.169.254
    'fec0::1', // site-local (deprecated)
    '::127.0.0.1', // IPv4-compatible loopback
    '::7f00:1', // the same, written in hex
    '::ffff:0:7f00:1', // IPv4-translated loopback
    '2001:0:4136:e378:8000:63bf:f5ff:fffe', // Teredo whose client is 10.0.0.1
    '2001:0:a00:1:8000:63bf:f7f7:f7f7', // Teredo whose server is 10.0.0.1
    '64:ff9b::10.0.0.1',
    '::ffff:127.0.0.1',
    '::ffff:169.254.169.254',
    '2001:db8::1', // documentation
    'ff02::1', // multicast
    '100::1', // discard-only
    '127.0.0.1',
    '10.0.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '::1',
    '::',
    'fd00:ec2::254',
    'fc00::1',
    'fe80::1',
    '::ffff:10.0.0.1',
  ]
  const allowed = [
    '93.184.216.34',
    '172.32.0.1',
    '8.8.8.8',
    '2606:4700::1111',
    '64:ff9b::808:808', // NAT64 of 8.8.8.8 (DNS64 on an IPv6-only cluster)
    '::ffff:8.8.8.8',
    '2002:808:808::1', // 6to4 of 8.8.8.8
    '2001:0:4136:e378:8000:63bf:f7f7:f7f7', // Teredo: server 65.54.227.120, client 8.8.8.8
  ]

  it.each(refused)('%s is refused, as a literal and as a DNS answer', async (address) => {
    expect(isGlobalUnicast(address)).toBe(false)
    const literal = address.includes(':') ? `[${address}]` : address
    await expect(checkWebhookTarget(`https://${literal}/x`, production([]))).rejects.toThrow(
      /^body\.url must not point/,
    )
    await expect(checkWebhookTarget('https://hooks.example/x', production([address]))).rejects.toThrow(
      /^body\.url must not point/,
    )
  })

  it.each(allowed)('%s is global unicast and allowed', async (address) => {
    expect(isGlobalUnicast(address)).toBe(true)
    await expect(
      checkWebhookTarget('https://hooks.example/x', production([address])),
    ).resolves.toBeUndefined()
  })

  it('refuses what is not an address at all', () => {
    expect(isGlobalUnicast('not-an-ip')).toBe(false)
    expect(isGlobalUnicast('')).toBe(false)
  })

  it('refuses a name that does not resolve in time, instead of waiting on the resolver', async () => {
    const started = Date.now()
    const rules = { ...production([]), lookup: () => new Promise<string[]>(() => {}), lookupTimeoutMs: 50 }
    await expect(checkWebhookTarget('https://slow.example/x', rules)).rejects.toThrow(
      /^body\.url host "slow\.example" does not resolve/,
    )
    expect(Date.now() - started).toBeLessThan(2000)
  })

  it('refuses a name when any of its addresses is private (a public one beside it does not help)', async () => {
    await expect(
      checkWebhookTarget('https://hooks.example/x', production(['93.184.216.34', '10.0.0.7'])),
    ).rejects.toThrow(/^body\.url must not point/)
    await expect(
      checkWebhookTarget('https://hooks.example/x', production(['93.184.216.34'])),
    ).resolves.toBeUndefined()
  })

  it('refuses a name that resolves to nothing', async () => {
    await expect(checkWebhookTarget('https://hooks.example/x', production([]))).rejects.toThrow(
      /does not resolve/,
    )
  })

  it('allows private targets when told to, but never credentials or other schemes', async () => {
    const rules = { production: false, allowPrivate: true, lookup: async () => ['127.0.0.1'] }
    await expect(checkWebhookTarget('http://receiver.local:8080/x', rules)).resolves.toBeUndefined()
    await expect(checkWebhookTarget('http://a:b@receiver.local/x', rules)).rejects.toThrow(/credentials/)
    await expect(checkWebhookTarget('file:///etc/passwd', rules)).rejects.toThrow(/^body\.url must use/)
  })
})
