import { useQuery } from '@tanstack/preact-query'
import { api } from '../api.ts'
import { Link } from '../router.tsx'
import { MessageFacts } from '../ui/message-facts.tsx'
import { Page, Section } from '../ui/page.tsx'
import { Loaded } from '../ui/status.tsx'
import { refreshWhileLive, Timeline } from '../ui/timeline.tsx'

/** One of the key's messages and its life, refreshed while anything can still happen to it. */
export function MessageDetail({ id }: { id: string }) {
  const timeline = useQuery({
    queryKey: ['messages', 'timeline', id],
    queryFn: () =>
      api.GET('/api/third-party/messages/{messageId}/timeline', { params: { path: { messageId: id } } }),
    refetchInterval: (query) => refreshWhileLive(query.state),
  })
  return (
    <Page title="Message">
      <p>
        <Link href="/">All messages</Link>
      </p>
      <Loaded query={timeline}>
        {({ message, entries }) => (
          <>
            <MessageFacts message={message} />
            <Section title="Timeline">
              <Timeline entries={entries} />
            </Section>
          </>
        )}
      </Loaded>
    </Page>
  )
}
