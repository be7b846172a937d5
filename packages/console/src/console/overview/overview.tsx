import { OVERVIEW_RANGES, type OverviewRange } from '@dispatch/contracts'
import { keepPreviousData, useQuery } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { Link } from '../../router.tsx'
import { ErrorTitle } from '../../ui/error-code.tsx'
import { Id } from '../../ui/id.tsx'
import { Page, Section } from '../../ui/page.tsx'
import { RangePicker } from '../../ui/range-picker.tsx'
import { Loaded, StatusBadge } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'
import { Time } from '../../ui/time.tsx'
import { useSenderOptions } from '../senders/sender-options.tsx'
import { MinuteChart } from './chart.tsx'

const RANGE_LABELS: Record<OverviewRange, string> = { '1h': 'hour', '24h': '24 hours', '7d': '7 days' }
const BUCKET_LABELS: Record<number, string> = { 60: 'minute', 900: 'quarter hour', 3600: 'hour' }

/** "Is anything on fire?": the first screen, refreshed every five seconds. */
export function Overview() {
  const senders = useSenderOptions()
  const nameOf = (senderId: string) =>
    senders.find((sender) => sender.id === senderId)?.displayName ?? senderId
  const [range, setRange] = useState<OverviewRange>('1h')
  const overview = useQuery({
    queryKey: ['overview', range],
    queryFn: () => api.GET('/api/admin/overview', { params: { query: { range } } }),
    refetchInterval: 5000,
    placeholderData: keepPreviousData,
  })
  return (
    <Page title="Overview">
      <Loaded query={overview}>
        {(data) => {
          const totals: Record<string, number> = {}
          for (const bucket of data.messagesPerMinute)
            for (const [status, count] of Object.entries(bucket.counts))
              totals[status] = (totals[status] ?? 0) + count
          const span = RANGE_LABELS[data.range]
          return (
            <>
              <p class="muted">
                As of <Time at={data.generatedAt} />; refreshes every few seconds.
              </p>
              <Section title={`Messages per ${BUCKET_LABELS[data.bucketSeconds] ?? 'bucket'} (${span})`}>
                <RangePicker range={range} onChange={setRange} />
                {data.messagesPerMinute.length === 0 ? (
                  <p class="muted">
                    No message in the last {span}. Messages appear here as keys send them: approve a key
                    request, or send a test from the portal.
                  </p>
                ) : (
                  <>
                    <MinuteChart
                      minutes={data.messagesPerMinute}
                      bucketSeconds={data.bucketSeconds}
                      until={data.generatedAt}
                      spanSeconds={OVERVIEW_RANGES[data.range].spanSeconds}
                    />
                    <p>
                      In the last {span}:{' '}
                      {Object.entries(totals)
                        .map(([status, count]) => `${count} ${status}`)
                        .join(', ') || 'nothing'}
                    </p>
                  </>
                )}
              </Section>
              <div class="grid">
                <Section title="Backlog per sender">
                  <Table
                    rows={data.backlog}
                    rowKey={(queue) => queue.name}
                    rowLink={(queue) => (queue.senderId ? `/senders/${queue.senderId}` : null)}
                    empty={
                      <>
                        No sender queue yet: <Link href="/senders">add a sender</Link>, and its queue shows
                        here with what waits in it.
                      </>
                    }
                    columns={[
                      {
                        header: 'Sender',
                        cell: (queue) => (queue.senderId ? nameOf(queue.senderId) : queue.name),
                      },
                      { header: 'Waiting', cell: (queue) => queue.counts.waiting },
                      { header: 'Active', cell: (queue) => queue.counts.active },
                      { header: 'Delayed', cell: (queue) => queue.counts.delayed },
                      { header: 'Failed', cell: (queue) => queue.counts.failed },
                      { header: 'Paused', cell: (queue) => (queue.paused || queue.held ? 'yes' : 'no') },
                    ]}
                  />
                </Section>
                <Section title="Senders needing attention">
                  {data.sendersNeedingAttention.length === 0 ? (
                    <p class="muted">None: every sender is active and healthy.</p>
                  ) : (
                    <ul>
                      {data.sendersNeedingAttention.map((sender) => (
                        <li key={sender.id}>
                          <Link href={`/senders/${sender.id}`}>{sender.displayName}</Link>{' '}
                          <StatusBadge status={sender.state} /> {sender.stateReason ?? ''}{' '}
                          {sender.health.qualityRating ? `quality ${sender.health.qualityRating}` : ''}
                        </li>
                      ))}
                    </ul>
                  )}
                </Section>
                <Section title="Failing webhook endpoints">
                  <Table
                    rows={data.failingWebhookEndpoints}
                    rowKey={(endpoint) => endpoint.endpointId}
                    empty="None failed in the last hour."
                    columns={[
                      {
                        header: 'Endpoint',
                        cell: (endpoint) => endpoint.url,
                        detail: (endpoint) => <Id value={endpoint.endpointId} copy="endpoint id" />,
                        class: 'wrap',
                      },
                      {
                        header: 'Key',
                        cell: (endpoint) => (
                          <Link href={`/keys/${endpoint.apiKeyId}`}>{endpoint.clientName ?? 'Key'}</Link>
                        ),
                        detail: (endpoint) => <Id value={endpoint.apiKeyId} copy="key id" />,
                      },
                      { header: 'Failures (1 h)', cell: (endpoint) => endpoint.failures },
                      { header: 'Last error', cell: (endpoint) => endpoint.lastError ?? '—', class: 'wrap' },
                      { header: 'Last attempt', cell: (endpoint) => <Time at={endpoint.lastAttemptAt} /> },
                    ]}
                  />
                </Section>
                <Section title="Top errors (1 h)">
                  <Table
                    rows={data.topErrors}
                    rowKey={(error) => error.code}
                    rowLink={(error) => `/messages?errorCode=${encodeURIComponent(error.code)}`}
                    empty="No error in the last hour."
                    columns={[
                      { header: 'Code', cell: (error) => <code>{error.code}</code> },
                      { header: 'Count', cell: (error) => error.count },
                      // In a few words, linked to the whole of it on the error codes page.
                      { header: 'Meaning', cell: (error) => <ErrorTitle code={error.code} />, class: 'wrap' },
                    ]}
                  />
                </Section>
              </div>
            </>
          )
        }}
      </Loaded>
    </Page>
  )
}
