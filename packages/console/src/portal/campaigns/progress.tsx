import type { Campaign } from '@dispatch/contracts'

type Counts = Campaign['counts']

/** Recipients whose message went out: sent, and on to delivered or read. */
export const gone = (counts: Counts) => counts.sent + counts.delivered + counts.read

/** How far a campaign is: its gone messages against the rows its upload took. */
export function ProgressBar({ campaign }: { campaign: Pick<Campaign, 'name' | 'counts' | 'audience'> }) {
  const taken = campaign.audience?.taken ?? 0
  if (taken === 0) return <span class="muted">no audience yet</span>
  const done = gone(campaign.counts)
  const percent = Math.floor((done / taken) * 100)
  return (
    <span class="progress">
      <progress max={taken} value={done} aria-label={`${campaign.name}: ${done} of ${taken} sent`} /> {done}{' '}
      of {taken} ({percent} %)
    </span>
  )
}
