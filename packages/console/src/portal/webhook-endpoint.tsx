import type { WebhookAttemptView } from '@dispatch/contracts'
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api } from '../api.ts'
import { Link } from '../router.tsx'
import { count, instant } from '../ui/format.ts'
import { Id } from '../ui/id.tsx'
import { Page, Section } from '../ui/page.tsx'
import { Pager } from '../ui/pager.tsx'
import { Loaded, Outcome } from '../ui/status.tsx'
import { Table } from '../ui/table.tsx'
import { Time } from '../ui/time.tsx'
import { prettyJson, useEventTypes } from './webhook-event-types.tsx'

/** One endpoint: its attempts (each failed one retried on demand), a replay of a window, a new secret. */
export function WebhookEndpoint({ id }: { id: string }) {
  const client = useQueryClient()
  const [page, setPage] = useState(1)
  const endpoint = useQuery({
    queryKey: ['webhooks', 'detail', id],
    queryFn: () => api.GET('/api/third-party/webhook-endpoints/{id}', { params: { path: { id } } }),
  })
  const attempts = useQuery({
    queryKey: ['webhooks', 'attempts', id, page],
    queryFn: () =>
      api.GET('/api/third-party/webhook-endpoints/{id}/attempts', {
        params: { path: { id }, query: { page, take: 25, order: 'DESC' } },
      }),
    placeholderData: keepPreviousData,
    refetchInterval: 5000,
  })
  const refresh = () => client.invalidateQueries({ queryKey: ['webhooks'] })
  const retry = useMutation({
    mutationFn: (eventId: string) =>
      api.POST('/api/third-party/webhook-endpoints/{id}/events/{eventId}/retry', {
        params: { path: { id, eventId } },
      }),
    onSuccess: refresh,
  })
  const replay = useMutation({
    mutationFn: (form: FormData) =>
      api.POST('/api/third-party/webhook-endpoints/{id}/replay', {
        params: { path: { id } },
        body: {
          since: instant(form, 'since') ?? '',
          ...(instant(form, 'until') ? { until: instant(form, 'until') } : {}),
        },
      }),
    onSuccess: refresh,
  })
  const [shown, setShown] = useState<WebhookAttemptView | null>(null)
  const rotate = useMutation({
    mutationFn: () =>
      api.POST('/api/third-party/webhook-endpoints/{id}/rotate-secret', { params: { path: { id } } }),
    onSuccess: refresh,
  })
  return (
    <Page title="Webhook endpoint">
      <p>
        <Link href="/webhooks">All endpoints</Link>
      </p>
      <Loaded query={endpoint}>
        {(data) => (
          <dl class="facts">
            <dt>Id</dt>
            <dd>
              <Id value={data.id} copy="endpoint id" />
            </dd>
            <dt>URL</dt>
            <dd class="wrap">{data.url}</dd>
            <dt>Events</dt>
            <dd>{data.events.join(', ')}</dd>
            <dt>State</dt>
            <dd>
              {data.enabled ? 'enabled' : `disabled${data.disabledReason ? `: ${data.disabledReason}` : ''}`}
            </dd>
            <dt>Previous secret valid until</dt>
            <dd>
              <Time at={data.previousSecretExpiresAt} />
            </dd>
          </dl>
        )}
      </Loaded>
      <SendExample endpointId={id} onSent={refresh} />
      <Section title="Attempts">
        <Outcome mutation={retry} done="Retry queued." />
        <Loaded query={attempts}>
          {(result) =>
            result.data.length === 0 ? (
              <p class="muted">No attempt yet.</p>
            ) : (
              <>
                <Table
                  rows={result.data}
                  rowKey={(attempt) => attempt.id}
                  columns={[
                    { header: 'When', cell: (attempt) => <Time at={attempt.createdAt} /> },
                    {
                      header: 'Event',
                      cell: (attempt) => attempt.eventType,
                      detail: (attempt) => <Id value={attempt.eventId} copy="event id" />,
                    },
                    { header: 'Attempt', cell: (attempt) => attempt.attempt },
                    {
                      header: 'Outcome',
                      class: 'wrap',
                      cell: (attempt) => (
                        <>
                          {attempt.success ? 'delivered' : 'failed'} {attempt.statusCode ?? ''}{' '}
                          {attempt.error ?? ''} ({attempt.durationMs} ms)
                        </>
                      ),
                    },
                    { header: 'Next retry', cell: (attempt) => <Time at={attempt.nextRetryAt} /> },
                    {
                      header: 'Action',
                      cell: (attempt) => (
                        <div class="row tight">
                          <button
                            type="button"
                            class="secondary"
                            aria-label={`Details of attempt ${attempt.attempt} of ${attempt.eventType} ${attempt.eventId}`}
                            onClick={() => setShown(attempt)}
                          >
                            Details
                          </button>
                          {attempt.success ? null : (
                            <button
                              type="button"
                              class="secondary"
                              aria-label={`Retry event ${attempt.eventType} ${attempt.eventId}`}
                              disabled={retry.isPending}
                              onClick={() => retry.mutate(attempt.eventId)}
                            >
                              Retry
                            </button>
                          )}
                        </div>
                      ),
                    },
                  ]}
                />
                <Pager {...result} onPage={setPage} />
                {shown ? (
                  <AttemptDetails endpointId={id} attempt={shown} onClose={() => setShown(null)} />
                ) : null}
              </>
            )
          }
        </Loaded>
      </Section>
      <Section title="Replay a window">
        <form
          class="row"
          aria-label="Replay a window"
          onSubmit={(event) => {
            event.preventDefault()
            replay.mutate(new FormData(event.currentTarget))
          }}
        >
          <label>
            Since
            <input name="since" type="datetime-local" required />
          </label>
          <label>
            Until
            <input name="until" type="datetime-local" />
          </label>
          <button type="submit" disabled={replay.isPending}>
            Replay events
          </button>
        </form>
        <Outcome
          mutation={replay}
          done={replay.data ? `${count(replay.data.events, 'event')} queued again.` : ''}
        />
      </Section>
      <Section title="Signing secret">
        <p>
          A new secret signs every delivery from now on; the previous one stays valid for a while, so you can
          switch.
        </p>
        <button type="button" class="danger" onClick={() => rotate.mutate()} disabled={rotate.isPending}>
          Rotate secret
        </button>
        <Outcome mutation={rotate} />
        {rotate.data ? (
          <p role="status">
            New secret (shown once): <code class="secret">{rotate.data.secret}</code>
          </p>
        ) : null}
      </Section>
    </Page>
  )
}

/**
 * An example of any event type, to this endpoint: signed and delivered as real events are, so its
 * attempt appears under Attempts with the request and the answer.
 */
function SendExample(props: { endpointId: string; onSent: () => void }) {
  const types = useEventTypes()
  const [chosen, setChosen] = useState('message.delivered')
  const send = useMutation({
    mutationFn: (eventType: string) =>
      api.POST('/api/third-party/webhook-endpoints/{id}/send-example', {
        params: { path: { id: props.endpointId } },
        body: { eventType: eventType as 'message.sent' },
      }),
    onSuccess: props.onSent,
  })
  return (
    <Section title="Send an example event">
      <Loaded query={types}>
        {({ data }) => {
          const example = data.find((entry) => entry.type === chosen) ?? data[0]
          return (
            <>
              <form
                class="row"
                aria-label="Send an example event"
                onSubmit={(event) => {
                  event.preventDefault()
                  if (example) send.mutate(example.type)
                }}
              >
                <label>
                  Event type
                  <select value={example?.type} onChange={(event) => setChosen(event.currentTarget.value)}>
                    {data.map((entry) => (
                      <option key={entry.type} value={entry.type}>
                        {entry.type}
                      </option>
                    ))}
                  </select>
                </label>
                <button type="submit" disabled={send.isPending}>
                  Send example
                </button>
              </form>
              <p class="muted">
                {example?.description} Sent to this endpoint whatever types it subscribes to, signed and
                retried as real events are; its body says <code>"example": true</code>.{' '}
                <Link href="/webhooks/event-types">Every event type</Link>
              </p>
              <Outcome
                mutation={send}
                done={
                  send.data ? `Example ${send.data.eventId} queued: its attempt appears under Attempts.` : ''
                }
              />
              {example ? <pre class="request example">{prettyJson(example.example)}</pre> : null}
            </>
          )
        }}
      </Loaded>
    </Section>
  )
}

/**
 * One attempt as the receiver met it: the request (its webhook-id and the exact body signed) and
 * what came back (status, the first KiB of the answer, or why none came), with its time.
 */
function AttemptDetails(props: { endpointId: string; attempt: WebhookAttemptView; onClose: () => void }) {
  const { attempt } = props
  const event = useQuery({
    queryKey: ['webhooks', 'event', props.endpointId, attempt.eventId],
    queryFn: () =>
      api.GET('/api/third-party/webhook-endpoints/{id}/events/{eventId}', {
        params: { path: { id: props.endpointId, eventId: attempt.eventId } },
      }),
  })
  return (
    <Section title="Attempt details">
      <dl class="facts">
        <dt>When</dt>
        <dd>
          <Time at={attempt.createdAt} />
        </dd>
        <dt>Attempt</dt>
        <dd>
          {attempt.attempt} of event {attempt.eventType}
        </dd>
        <dt>Response</dt>
        <dd>
          {attempt.statusCode === null ? 'no answer' : `HTTP ${attempt.statusCode}`} in {attempt.durationMs}{' '}
          ms
          {attempt.error ? ` (${attempt.error})` : ''}
        </dd>
      </dl>
      <h3>Request</h3>
      <Loaded query={event}>
        {(data) => (
          <pre class="request">{`webhook-id: ${data.id}\ncontent-type: application/json\n\n${pretty(data.body)}`}</pre>
        )}
      </Loaded>
      <h3>Response body (first KiB)</h3>
      <pre class="request">{attempt.responseExcerpt ?? '(none)'}</pre>
      <button type="button" class="secondary" onClick={props.onClose}>
        Close details
      </button>
    </Section>
  )
}

const pretty = (body: string) => {
  try {
    return JSON.stringify(JSON.parse(body), null, 2)
  } catch {
    return body
  }
}
