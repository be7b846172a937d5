import { useQuery } from '@tanstack/preact-query'
import { api, paging } from '../api.ts'
import { Link } from '../router.tsx'
import { Id } from '../ui/id.tsx'
import { Page } from '../ui/page.tsx'
import { Loaded } from '../ui/status.tsx'
import { Table } from '../ui/table.tsx'
import { Time } from '../ui/time.tsx'

/** The key's webhook endpoints; each links to its attempts. */
export function WebhookEndpoints() {
  const endpoints = useQuery({
    queryKey: ['webhooks', 'list'],
    queryFn: () => api.GET('/api/third-party/webhook-endpoints', { params: { query: paging(1, 100) } }),
  })
  return (
    <Page title="Webhook endpoints">
      <p>
        <Link href="/webhooks/event-types">Event catalog</Link>: every event type, what it means and an
        example of its body.
      </p>
      <Loaded query={endpoints}>
        {(result) => (
          <Table
            empty={
              <>
                No endpoint yet. This page does not add one: your system registers its endpoints through the
                API (<code>POST /api/third-party/webhook-endpoints</code>, with the URL and the events it
                wants; the answer shows its signing secret once). See{' '}
                <a href="/docs#/webhooks/createWebhookEndpoint">how, in the API docs</a>.
              </>
            }
            rows={result.data}
            rowKey={(endpoint) => endpoint.id}
            rowLink={(endpoint) => `/webhooks/${endpoint.id}`}
            columns={[
              {
                header: 'URL',
                cell: (endpoint) => endpoint.url,
                detail: (endpoint) => endpoint.description,
                class: 'wrap',
              },
              { header: 'Id', cell: (endpoint) => <Id value={endpoint.id} copy="endpoint id" /> },
              { header: 'Events', cell: (endpoint) => endpoint.events.join(', '), class: 'wrap' },
              {
                header: 'State',
                cell: (endpoint) =>
                  endpoint.enabled
                    ? 'enabled'
                    : `disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}`,
              },
              { header: 'Failing since', cell: (endpoint) => <Time at={endpoint.failingSince} /> },
            ]}
          />
        )}
      </Loaded>
    </Page>
  )
}
