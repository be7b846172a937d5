import { isPrivateAddress } from '@dispatch/contracts'
import { describe, expect, it } from 'vitest'
import { checkWebhookTarget } from './webhook-targets.ts'

const production = (addresses: string[]) => ({
  production: true,
  allowPrivate: false,
  lookup: async () => addresses,
})

describe('webhook targets', () => {
  it.each([
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
    'not-an-ip',
  ])('%s is private', (address) => {
    expect(isPrivateAddress(address)).toBe(true)
  })

  it.each(['93.184.216.34', '172.32.0.1', '8.8.8.8', '2606:4700::1111'])('%s is public', (address) => {
    expect(isPrivateAddress(address)).toBe(false)
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
