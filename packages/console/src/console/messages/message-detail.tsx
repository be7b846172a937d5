import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { api } from '../../api.ts'
import { Link } from '../../router.tsx'
import { CancelMessage } from '../../ui/cancel-message.tsx'
import { Id } from '../../ui/id.tsx'
import { MessageFacts } from '../../ui/message-facts.tsx'
import { MessageRequest } from '../../ui/message-request.tsx'
import { Page, Section } from '../../ui/page.tsx'
import { Loaded, Outcome } from '../../ui/status.tsx'
import { refreshWhileLive, Timeline } from '../../ui/timeline.tsx'

/** Statuses a message can still be canceled in: no worker has taken it yet. */

/**
 * One message and its whole life, refreshed while anything can still happen to it; a failed one
 * can be retried, one no worker has taken yet (scheduled, or queued) canceled (both audited).
 */
export function MessageDetail({ id }: { id: string }) {
  const client = useQueryClient()
  const timeline = useQuery({
    queryKey: ['messages', 'timeline', id],
    queryFn: () => api.GET('/api/admin/messages/{id}/timeline', { params: { path: { id } } }),
    refetchInterval: (query) => refreshWhileLive(query.state),
  })
  const retry = useMutation({
    mutationFn: () => api.POST('/api/admin/messages/{id}/retry', { params: { path: { id } } }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['messages'] }),
  })
  const cancel = useMutation({
    mutationFn: () => api.POST('/api/admin/messages/{id}/cancel', { params: { path: { id } } }),
    onSettled: () => client.invalidateQueries({ queryKey: ['messages'] }),
  })
  return (
    <Page title="Message">
      <p>
        <Link href="/messages">All messages</Link>
      </p>
      <Loaded query={timeline}>
        {({ message, request, entries }) => (
          <>
            <MessageFacts message={message}>
              <dt>Key</dt>
              <dd>
                <Link href={`/keys/${message.apiKeyId}`}>{message.clientName ?? 'Key'}</Link>{' '}
                <Id value={message.apiKeyId} copy="key id" />
              </dd>
              <dt>Sender</dt>
              <dd>
                {message.senderId ? (
                  <Link href={`/senders/${message.senderId}`}>{message.senderId}</Link>
                ) : (
                  '—'
                )}
              </dd>
              <dt>Attempts</dt>
              <dd>
                {message.attempts}
                {message.retryCount === 1
                  ? ', retried once'
                  : message.retryCount > 1
                    ? `, retried ${message.retryCount} times`
                    : ''}
              </dd>
            </MessageFacts>
            {message.status === 'failed' && !smsMayHaveGone(message.fallback?.state) ? (
              <div class="row">
                <button type="button" onClick={() => retry.mutate()} disabled={retry.isPending}>
                  Retry message
                </button>
              </div>
            ) : null}
            <Outcome mutation={retry} done="Retried: the message is queued again." />
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

/**
 * Whether the message's SMS fallback went, or may have (decided, being called, answer unknown):
 * then a retry would reach the recipient a second time, on WhatsApp, and the page offers none.
 */
const smsMayHaveGone = (state: string | undefined) =>
  state === 'decided' || state === 'calling' || state === 'sent' || state === 'unknown'
