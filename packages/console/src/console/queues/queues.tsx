import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { api } from '../../api.ts'
import { text } from '../../ui/format.ts'
import { Page } from '../../ui/page.tsx'
import { Loaded, Outcome } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'
import { Time } from '../../ui/time.tsx'
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
          <Table
            rows={result.data as QueueRow[]}
            rowKey={(queue) => queue.name}
            rowLink={(queue) => (queue.senderId ? `/senders/${queue.senderId}` : null)}
            columns={[
              {
                header: 'Queue',
                cell: (queue) => queue.name,
                detail: (queue) => (queue.kind === queue.name ? null : queue.kind),
              },
              {
                header: 'Waiting',
                cell: (queue) => queue.counts.waiting + (queue.counts.waitingAdmission ?? 0),
              },
              { header: 'Active', cell: (queue) => queue.counts.active },
              { header: 'Delayed', cell: (queue) => queue.counts.delayed },
              { header: 'Failed', cell: (queue) => queue.counts.failed },
              { header: 'Rate limit / s', cell: (queue) => rateOf(queue.senderId) ?? '—' },
              {
                header: 'State',
                cell: (queue) =>
                  queue.paused ? (
                    <span>
                      <strong>paused</strong> by {queue.switchedBy ?? '?'} <Time at={queue.switchedAt} />
                      {queue.reason ? `: ${queue.reason}` : ''}
                    </span>
                  ) : queue.held ? (
                    'held (by the messages switch, or its sender is paused)'
                  ) : (
                    'running'
                  ),
              },
              { header: 'Switch', cell: (queue) => <QueueSwitch queue={queue} /> },
            ]}
          />
        )}
      </Loaded>
    </Page>
  )
}
