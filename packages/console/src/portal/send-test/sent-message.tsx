import { useQuery } from '@tanstack/preact-query'
import { api } from '../../api.ts'
import { Link } from '../../router.tsx'
import { MessageFacts } from '../../ui/message-facts.tsx'
import { Section } from '../../ui/page.tsx'
import { Loaded } from '../../ui/status.tsx'
import { refreshWhileLive, Timeline } from '../../ui/timeline.tsx'

/** How long the answer follows a message that does not settle (sent, never delivered: a sandbox). */
const FOLLOW_MS = 5 * 60_000

/**
 * The test message's timeline, live: read every 3 s until it settles, and never again once a read
 * failed (not found stays not found; an API away is not asked every 3 s) or after five minutes.
 */
export function SentMessage({ id, sentAt }: { id: string; sentAt: number }) {
  const timeline = useQuery({
    queryKey: ['messages', 'timeline', id],
    queryFn: () =>
      api.GET('/api/third-party/messages/{messageId}/timeline', { params: { path: { messageId: id } } }),
    refetchInterval: (query) =>
      query.state.error || Date.now() - sentAt > FOLLOW_MS ? false : refreshWhileLive(query.state),
  })
  return (
    <Section title="Your test message">
      <Loaded query={timeline}>
        {({ message, entries }) => (
          <>
            <MessageFacts message={message} />
            <Timeline entries={entries} />
            <p>
              <Link href={`/messages/${id}`}>Open the message's page</Link>
            </p>
          </>
        )}
      </Loaded>
    </Section>
  )
}
