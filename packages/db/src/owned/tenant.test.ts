import { describe, expect, it } from 'vitest'
import type { Caller } from './caller.ts'
import { TenantForbidden, tenantOf } from './tenant.ts'

const caller = (tenantId: string | null): Caller => ({ apiKeyId: 'k', tenantId, senderId: 'default' })

describe('the tenant rule of the owned layer', () => {
  it("gives the key's own tenant, named or not", () => {
    expect(tenantOf(caller('acme'))).toBe('acme')
    expect(tenantOf(caller('acme'), 'acme')).toBe('acme')
  })

  it('refuses a key bound to no tenant, and a tenantId naming another', () => {
    expect(() => tenantOf(caller(null))).toThrow(TenantForbidden)
    expect(() => tenantOf(caller(null), 'acme')).toThrow('bound to no tenant')
    expect(() => tenantOf(caller('acme'), 'evil')).toThrow('may not access tenant "evil"')
    expect(() => tenantOf(caller('acme'), '')).toThrow(TenantForbidden)
  })
})
