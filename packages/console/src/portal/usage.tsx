import { useQuery } from '@tanstack/preact-query'
import { api } from '../api.ts'
import { Page, Section } from '../ui/page.tsx'
import { Loaded, StatusBadge } from '../ui/status.tsx'
import { Time } from '../ui/time.tsx'

/** The key's limits and what it has used today. */
export function Usage() {
  const me = useQuery({
    queryKey: ['me'],
    queryFn: () => api.GET('/api/api-keys/me'),
    refetchInterval: 15_000,
  })
  return (
    <Page title="Limits and usage">
      <Loaded query={me}>
        {(key) => (
          <>
            <dl class="facts">
              <dt>Client</dt>
              <dd>{key.clientName}</dd>
              <dt>Key</dt>
              <dd>
                <code>{key.keyPrefix}…</code> <StatusBadge status={key.status} />
              </dd>
              <dt>Tenant</dt>
              <dd>{key.tenantId ?? 'none'}</dd>
              <dt>Scopes</dt>
              <dd>{key.scopes.join(', ')}</dd>
            </dl>
            <Section title="Today">
              <dl class="facts">
                <dt>Accepted today</dt>
                <dd>{key.usage.today}</dd>
                <dt>Left today</dt>
                <dd>{key.usage.remainingToday ?? 'no quota'}</dd>
                <dt>Resets</dt>
                <dd>
                  <Time at={key.usage.resetsAt} />
                </dd>
              </dl>
            </Section>
            <Section title="Limits">
              <dl class="facts">
                <dt>Rate</dt>
                <dd>{key.limits.effectiveRatePerSecond} messages per second</dd>
                <dt>Daily quota</dt>
                <dd>{key.limits.dailyQuota ?? 'none'}</dd>
                <dt>Sender</dt>
                <dd>{key.limits.senderId ?? 'default'}</dd>
                <dt>Transactional</dt>
                <dd>{key.limits.transactional ? 'yes' : 'no'}</dd>
                <dt>Quiet hours</dt>
                <dd>
                  {key.limits.quietHours
                    ? `${key.limits.quietHours.start}–${key.limits.quietHours.end} ${key.limits.quietHours.timeZone ?? ''}`
                    : 'none'}
                </dd>
              </dl>
            </Section>
          </>
        )}
      </Loaded>
    </Page>
  )
}
