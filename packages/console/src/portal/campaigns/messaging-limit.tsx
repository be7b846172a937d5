import type { MessagingLimitView } from '@dispatch/contracts'
import { useQuery } from '@tanstack/preact-query'
import { api } from '../../api.ts'
import { Section } from '../../ui/page.tsx'
import { Loaded } from '../../ui/status.tsx'
import { Time } from '../../ui/time.tsx'

const SOURCES: Record<MessagingLimitView['source'], string> = {
  admin: 'set by an admin',
  synced: 'as Meta last reported',
  none: 'no limit known',
}

/**
 * A messaging limit as facts: the unique users a business portfolio may reach outside their window
 * in a moving 24 hours, how many it has reached, when room frees. A campaign's message past it
 * waits (`held`) until there is room. The portal's campaign page and the console's sender page.
 */
export function MessagingLimitFacts({
  view,
  portfolio = false,
}: {
  view: MessagingLimitView
  portfolio?: boolean
}) {
  return (
    <dl class="facts">
      {portfolio ? (
        <>
          <dt>Portfolio</dt>
          <dd>
            <code>{view.portfolio}</code>
          </dd>
        </>
      ) : null}
      <dt>Limit</dt>
      <dd>
        {view.limit === null ? 'unlimited' : `${view.limit} users in 24 hours`}
        {view.tier ? <span class="muted"> ({view.tier})</span> : null}
        {portfolio ? <span class="muted"> · {SOURCES[view.source]}</span> : null}
      </dd>
      <dt>Reached</dt>
      <dd>
        {view.reach === null ? (
          'not counted'
        ) : view.limit === null ? (
          view.reach
        ) : (
          <>
            <meter min={0} max={view.limit} value={view.reach} aria-label="Reached of the limit" />{' '}
            {view.reach} of {view.limit}
          </>
        )}
      </dd>
      <dt>Room frees</dt>
      <dd>
        <Time at={view.roomAt} />
      </dd>
      <dt>Past it</dt>
      <dd>
        {view.policy === 'off' ? 'not counted' : 'campaign messages wait for room'}
        <span class="muted"> (single sends: {view.policy})</span>
      </dd>
    </dl>
  )
}

/** The key's own sender's messaging limit, read again every 15 s. */
export function MessagingLimit() {
  const limit = useQuery({
    queryKey: ['messaging-limit'],
    queryFn: () => api.GET('/api/third-party/messaging-limit'),
    refetchInterval: 15_000,
  })
  return (
    <Section title="Messaging limit">
      <Loaded query={limit}>{(view) => <MessagingLimitFacts view={view} />}</Loaded>
    </Section>
  )
}
