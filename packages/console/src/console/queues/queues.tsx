import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { api } from '../../api.ts'
import { Link } from '../../router.tsx'
import { formatTime, text } from '../../ui/format.ts'
import { Page } from '../../ui/page.tsx'
import { Loaded, Outcome } from '../../ui/status.tsx'
import { useSenderOptions } from '../senders/sender-options.tsx'

interface QueueRow {
  name: string
  kind: string
  senderId?: string | null
  paused: boolean
  held: boolean
  switchedBy?: string | null
  reason?: string | null
  switchedAt?: string | null
  counts: {
    waiting: number
    active: number
    delayed: number
    failed: number
    prioritized: number
    waitingAdmission?: number
  }
}

function QueueSwitch({ queue }: { queue: QueueRow }) {
  const client = useQueryClient()
  const toggle = useMutation({
    mutationFn: (reason: string | undefined) =>
      api.POST(queue.paused ? '/api/admin/queues/{name}/resume' : '/api/admin/queues/{name}/pause', {
        params: { path: { name: queue.name } },
        body: reason ? { reason } : {},
      }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['queues'] }),
  })
  const action = queue.paused ? 'Resume' : 'Pause'
  return (
    <form
      class="row tight"
      aria-label={`${action} ${queue.name}`}
      onSubmit={(event) => {
        event.preventDefault()
        toggle.mutate(text(new FormData(event.currentTarget), 'reason'))
        event.currentTarget.reset()
      }}
    >
      <label>
        Reason
        <input name="reason" />
      </label>
      <button type="submit" class={queue.paused ? '' : 'danger'} disabled={toggle.isPending}>
        {action} {queue.name}
      </button>
      <Outcome mutation={toggle} />
    </form>
  )
}

/** Every queue's depth and state; delivery paused and resumed with a reason. */
export function Queues() {
  // A sender's queue drains at most at its sender's rate.
  const senders = useSenderOptions()
  const rateOf = (senderId: string | null | undefined) =>
    senders.find((sender) => sender.id === senderId)?.ratePerSecond
  const queues = useQuery({
    queryKey: ['queues'],
    queryFn: () => api.GET('/api/admin/queues'),
    refetchInterval: 5000,
  })
  return (
    <Page
      title="Queues"
      actions={
        <a href="/admin/queues" class="button secondary">
          Queue dashboard (jobs)
        </a>
      }
    >
      <Loaded query={queues}>
        {(result) => (
          <table>
            <thead>
              <tr>
                <th scope="col">Queue</th>
                <th scope="col">Waiting</th>
                <th scope="col">Active</th>
                <th scope="col">Delayed</th>
                <th scope="col">Failed</th>
                <th scope="col">Rate limit / s</th>
                <th scope="col">State</th>
                <th scope="col">Switch</th>
              </tr>
            </thead>
            <tbody>
              {(result.data as QueueRow[]).map((queue) => (
                <tr key={queue.name}>
                  <td>
                    {queue.senderId ? (
                      <Link href={`/senders/${queue.senderId}`}>{queue.name}</Link>
                    ) : (
                      queue.name
                    )}
                    {queue.kind === queue.name ? null : <div class="muted">{queue.kind}</div>}
                  </td>
                  <td>{queue.counts.waiting + (queue.counts.waitingAdmission ?? 0)}</td>
                  <td>{queue.counts.active}</td>
                  <td>{queue.counts.delayed}</td>
                  <td>{queue.counts.failed}</td>
                  <td>{rateOf(queue.senderId) ?? '—'}</td>
                  <td>
                    {queue.paused ? (
                      <span>
                        <strong>paused</strong> by {queue.switchedBy ?? '?'} {formatTime(queue.switchedAt)}
                        {queue.reason ? `: ${queue.reason}` : ''}
                      </span>
                    ) : queue.held ? (
                      'held (by the messages switch, or its sender is paused)'
                    ) : (
                      'running'
                    )}
                  </td>
                  <td>
                    <QueueSwitch queue={queue} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Loaded>
    </Page>
  )
}
