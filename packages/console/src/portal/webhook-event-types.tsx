import { useQuery } from '@tanstack/preact-query'
import { api } from '../api.ts'
import { Link } from '../router.tsx'
import { Page } from '../ui/page.tsx'
import { Loaded } from '../ui/status.tsx'

/**
 * The event catalog, read once per session: it is the service's, the same for every key (kept out
 * of the `['webhooks']` queries an endpoint's changes refresh).
 */
export const useEventTypes = () =>
  useQuery({
    queryKey: ['webhook-event-types'],
    queryFn: () => api.GET('/api/third-party/webhook-event-types'),
    staleTime: Number.POSITIVE_INFINITY,
  })

export const prettyJson = (value: unknown) => JSON.stringify(value, null, 2)

/**
 * Every event the service sends, as Svix's App Portal lists them: its type, what it means, and an
 * example of the body a delivery carries, to build a receiver against before any real event.
 */
export function WebhookEventTypes() {
  const types = useEventTypes()
  return (
    <Page title="Event catalog">
      <p>
        <Link href="/webhooks">All endpoints</Link>
      </p>
      <p>
        Each delivery is a signed POST of <code>{'{type, timestamp, data}'}</code>; an endpoint receives the
        types it subscribes to. Examples sent from an endpoint's page carry <code>"example": true</code>, as
        these do.
      </p>
      <Loaded query={types}>
        {({ data }) => (
          <div class="stack">
            {data.map((entry) => (
              <section key={entry.type} class="card" aria-labelledby={`event-${entry.type}`}>
                <h2 id={`event-${entry.type}`}>
                  <code>{entry.type}</code>
                </h2>
                <p>{entry.description}</p>
                <pre class="request example">{prettyJson(entry.example)}</pre>
              </section>
            ))}
          </div>
        )}
      </Loaded>
    </Page>
  )
}
