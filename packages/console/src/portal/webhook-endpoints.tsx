import { useQuery } from '@tanstack/preact-query'
import { api, paging } from '../api.ts'
import { Link } from '../router.tsx'
import { formatTime } from '../ui/format.ts'
import { Page } from '../ui/page.tsx'
import { Loaded } from '../ui/status.tsx'

/** The key's webhook endpoints; each links to its attempts. */
export function WebhookEndpoints() {
  const endpoints = useQuery({
    queryKey: ['webhooks', 'list'],
    queryFn: () => api.GET('/api/third-party/webhook-endpoints', { params: { query: paging(1, 100) } }),
  })
  return (
    <Page title="Webhook endpoints">
      <Loaded query={endpoints}>
        {(result) =>
          result.data.length === 0 ? (
            <p class="muted">No endpoint: create one with POST /api/third-party/webhook-endpoints.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Events</th>
                  <th scope="col">State</th>
                  <th scope="col">Failing since</th>
                </tr>
              </thead>
              <tbody>
                {result.data.map((endpoint) => (
                  <tr key={endpoint.id}>
                    <td class="wrap">
                      <Link href={`/webhooks/${endpoint.id}`}>{endpoint.url}</Link>
                      {endpoint.description ? <div class="muted">{endpoint.description}</div> : null}
                    </td>
                    <td class="wrap">{endpoint.events.join(', ')}</td>
                    <td>
                      {endpoint.enabled
                        ? 'enabled'
                        : `disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}`}
                    </td>
                    <td>{formatTime(endpoint.failingSince)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
    </Page>
  )
}
