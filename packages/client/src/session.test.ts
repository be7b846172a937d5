import { describe, expect, it } from 'vitest'
import { createDispatchClient } from './index.ts'

/** A fetch that records what each request carried. */
function recording() {
  const seen: { method: string; csrf: string | null; credentials: RequestCredentials }[] = []
  const fetch = async (request: Request) => {
    seen.push({
      method: request.method,
      csrf: request.headers.get('x-csrf-token'),
      credentials: request.credentials,
    })
    return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } })
  }
  return { seen, fetch }
}

describe('a cookie session', () => {
  it('sends same-origin cookies, and the CSRF token on changes only, as it stands at each call', async () => {
    const { seen, fetch } = recording()
    let token: string | undefined
    const client = createDispatchClient({
      baseUrl: 'http://api.test',
      fetch,
      session: { csrfToken: () => token },
    })
    await client.GET('/api/api-keys/me')
    await client.POST('/api/api-keys/request', {
      body: { clientName: 'Acme', email: 'ops@acme.test', scopes: [] },
    })
    token = 'csrf-1'
    await client.GET('/api/admin/queues')
    await client.POST('/api/admin/queues/{name}/pause', { params: { path: { name: 'messages' } }, body: {} })
    expect(seen).toEqual([
      { method: 'GET', csrf: null, credentials: 'same-origin' },
      { method: 'POST', csrf: null, credentials: 'same-origin' },
      { method: 'GET', csrf: null, credentials: 'same-origin' },
      { method: 'POST', csrf: 'csrf-1', credentials: 'same-origin' },
    ])
  })

  it('leaves a client without a session as it was: no CSRF header', async () => {
    const { seen, fetch } = recording()
    const client = createDispatchClient({ baseUrl: 'http://api.test', fetch, adminToken: 't' })
    await client.POST('/api/admin/queues/{name}/pause', { params: { path: { name: 'messages' } }, body: {} })
    expect(seen[0]?.csrf).toBeNull()
  })
})
