import { useQuery } from '@tanstack/preact-query'
import { api } from '../api.ts'
import { Link } from '../router.tsx'
import { formatTime } from '../ui/format.ts'
import { Page, Section } from '../ui/page.tsx'
import { Loaded, StatusBadge } from '../ui/status.tsx'
import { refreshWhileLive, Timeline } from '../ui/timeline.tsx'

/** One of the key's messages and its life, refreshed while anything can still happen to it. */
export function MessageDetail({ id }: { id: string }) {
  const timeline = useQuery({
    queryKey: ['messages', 'timeline', id],
    queryFn: () =>
      api.GET('/api/third-party/messages/{messageId}/timeline', { params: { path: { messageId: id } } }),
    refetchInterval: (query) => refreshWhileLive(query.state.data?.message.status),
  })
  return (
    <Page title="Message">
      <p>
        <Link href="/">All messages</Link>
      </p>
      <Loaded query={timeline}>
        {({ message, entries }) => (
          <>
            <dl class="facts">
              <dt>Id</dt>
              <dd>
                <code>{message.messageId}</code>
              </dd>
              <dt>Status</dt>
              <dd>
                <StatusBadge status={message.status} />
              </dd>
              <dt>To</dt>
              <dd>{message.phone ?? message.userId ?? '—'}</dd>
              <dt>Type</dt>
              <dd>{message.type}</dd>
              <dt>Client reference</dt>
              <dd>{message.clientReference ?? '—'}</dd>
              <dt>Accepted</dt>
              <dd>{formatTime(message.createdAt)}</dd>
              {message.lastError ? (
                <>
                  <dt>Last error</dt>
                  <dd>
                    <code>{message.lastError.code}</code> {message.lastError.message}
                  </dd>
                </>
              ) : null}
            </dl>
            <Section title="Timeline">
              <Timeline entries={entries} />
            </Section>
          </>
        )}
      </Loaded>
    </Page>
  )
}
