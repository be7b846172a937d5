import { useQuery } from '@tanstack/preact-query'
import { api } from '../../api.ts'
import { Link } from '../../router.tsx'
import { formatTime } from '../../ui/format.ts'
import { Page, Section } from '../../ui/page.tsx'
import { Loaded, StatusBadge } from '../../ui/status.tsx'
import { useSenderOptions } from '../senders/sender-options.tsx'
import { MinuteChart } from './chart.tsx'

/** "Is anything on fire?": the first screen, refreshed every five seconds. */
export function Overview() {
  const senders = useSenderOptions()
  const nameOf = (senderId: string) =>
    senders.find((sender) => sender.id === senderId)?.displayName ?? senderId
  const overview = useQuery({
    queryKey: ['overview'],
    queryFn: () => api.GET('/api/admin/overview'),
    refetchInterval: 5000,
  })
  return (
    <Page title="Overview">
      <Loaded query={overview}>
        {(data) => {
          const lastHour = data.messagesPerMinute.filter((m) => Date.parse(m.minute) > Date.now() - 3_600_000)
          const totals: Record<string, number> = {}
          for (const minute of lastHour)
            for (const [status, count] of Object.entries(minute.counts))
              totals[status] = (totals[status] ?? 0) + count
          return (
            <>
              <p class="muted">
                As of <time dateTime={data.generatedAt}>{formatTime(data.generatedAt)}</time>; refreshes every
                few seconds.
              </p>
              <Section title="Messages per minute (24 h)">
                {data.messagesPerMinute.length === 0 ? (
                  <p class="muted">No message in the last 24 hours.</p>
                ) : (
                  <>
                    <MinuteChart minutes={data.messagesPerMinute} />
                    <p>
                      Last hour:{' '}
                      {Object.entries(totals)
                        .map(([status, count]) => `${count} ${status}`)
                        .join(', ') || 'nothing'}
                    </p>
                  </>
                )}
              </Section>
              <div class="grid">
                <Section title="Backlog per sender">
                  {data.backlog.length === 0 ? (
                    <p class="muted">No sender queue.</p>
                  ) : (
                    <table>
                      <thead>
                        <tr>
                          <th scope="col">Sender</th>
                          <th scope="col">Waiting</th>
                          <th scope="col">Active</th>
                          <th scope="col">Delayed</th>
                          <th scope="col">Failed</th>
                          <th scope="col">Paused</th>
                        </tr>
                      </thead>
                      <tbody>
                        {data.backlog.map((queue) => (
                          <tr key={queue.name}>
                            <td>
                              {queue.senderId ? (
                                <Link href={`/senders/${queue.senderId}`}>{nameOf(queue.senderId)}</Link>
                              ) : (
                                queue.name
                              )}
                            </td>
                            <td>{queue.counts.waiting}</td>
                            <td>{queue.counts.active}</td>
                            <td>{queue.counts.delayed}</td>
                            <td>{queue.counts.failed}</td>
                            <td>{queue.paused || queue.held ? 'yes' : 'no'}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  )}
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
                  {data.failingWebhookEndpoints.length === 0 ? (
                    <p class="muted">None failed in the last hour.</p>
                  ) : (
                    <table>
                      <thead>
                        <tr>
                          <th scope="col">Endpoint</th>
                          <th scope="col">Key</th>
                          <th scope="col">Failures (1 h)</th>
                          <th scope="col">Last error</th>
                          <th scope="col">Last attempt</th>
                        </tr>
                      </thead>
                      <tbody>
                        {data.failingWebhookEndpoints.map((endpoint) => (
                          <tr key={endpoint.endpointId}>
                            <td class="wrap">{endpoint.url}</td>
                            <td>
                              <Link href={`/keys/${endpoint.apiKeyId}`}>{endpoint.apiKeyId.slice(0, 8)}</Link>
                            </td>
                            <td>{endpoint.failures}</td>
                            <td class="wrap">{endpoint.lastError ?? '—'}</td>
                            <td>{formatTime(endpoint.lastAttemptAt)}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  )}
                </Section>
                <Section title="Top errors (1 h)">
                  {data.topErrors.length === 0 ? (
                    <p class="muted">No error in the last hour.</p>
                  ) : (
                    <table>
                      <thead>
                        <tr>
                          <th scope="col">Code</th>
                          <th scope="col">Count</th>
                          <th scope="col">Meaning</th>
                        </tr>
                      </thead>
                      <tbody>
                        {data.topErrors.map((error) => (
                          <tr key={error.code}>
                            <td>
                              <Link href={`/messages?errorCode=${encodeURIComponent(error.code)}`}>
                                <code>{error.code}</code>
                              </Link>
                            </td>
                            <td>{error.count}</td>
                            <td class="wrap">{error.meaning ?? '—'}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  )}
                </Section>
              </div>
            </>
          )
        }}
      </Loaded>
    </Page>
  )
}
