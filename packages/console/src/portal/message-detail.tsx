import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { api } from '../api.ts'
import { Link } from '../router.tsx'
import { CancelMessage } from '../ui/cancel-message.tsx'
import { MessageFacts } from '../ui/message-facts.tsx'
import { MessageRequest } from '../ui/message-request.tsx'
import { Page, Section } from '../ui/page.tsx'
import { Loaded } from '../ui/status.tsx'
import { refreshWhileLive, Timeline } from '../ui/timeline.tsx'

/** Statuses a message can still be canceled in: no worker has taken it yet. */

/**
 * One of the key's messages and its life, refreshed while anything can still happen to it; a
 * message no worker has taken yet (scheduled, or queued) can be canceled from here.
 */
export function MessageDetail({ id }: { id: string }) {
  const client = useQueryClient()
  const timeline = useQuery({
    queryKey: ['messages', 'timeline', id],
    queryFn: () =>
      api.GET('/api/third-party/messages/{messageId}/timeline', { params: { path: { messageId: id } } }),
    refetchInterval: (query) => refreshWhileLive(query.state),
  })
  const cancel = useMutation({
    mutationFn: () =>
      api.POST('/api/third-party/messages/{messageId}/cancel', { params: { path: { messageId: id } } }),
    onSettled: () => client.invalidateQueries({ queryKey: ['messages'] }),
  })
  return (
    <Page title="Message">
      <p>
        <Link href="/">All messages</Link>
      </p>
      <Loaded query={timeline}>
        {({ message, request, entries }) => (
          <>
            <MessageFacts message={message} />
            <CancelMessage status={message.status} cancel={cancel} />
            <MessageRequest request={request} redacted={message.redacted} />
            <Section title="Timeline">
              <Timeline entries={entries} />
            </Section>
          </>
        )}
      </Loaded>
    </Page>
  )
}
