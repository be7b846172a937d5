import { DispatchError } from '@dispatch/client'
import { ErrorCode } from './error-code.tsx'
import { Time } from './time.tsx'

export interface TimelineEntry {
  at: string
  kind: string
  summary: string
  errorCode?: string
  sendAt?: string
}

/** A message's life, oldest first, as an ordered list a person reads top to bottom. */
export function Timeline({ entries }: { entries: TimelineEntry[] }) {
  if (entries.length === 0) return <p class="muted">Nothing recorded yet.</p>
  return (
    <ol class="timeline" aria-label="Timeline">
      {entries.map((entry, index) => (
        <li key={`${entry.at}-${index}`} class={`tl tl-${entry.kind}`}>
          <Time at={entry.at} />
          <span class="tl-kind">{entry.kind.replace(/_/g, ' ')}</span>
          <span class="tl-summary">
            <Summary entry={entry} />
          </span>
          {entry.errorCode ? (
            <span class="tl-code">
              <ErrorCode code={entry.errorCode} said={entry.summary} />
            </span>
          ) : null}
        </li>
      ))}
    </ol>
  )
}

/**
 * An entry's line; a time it names (a scheduled message's `sendAt`) shown as every time is, in
 * the viewer's zone with the UTC instant on hover, instead of the ISO string the API writes.
 */
function Summary({ entry }: { entry: TimelineEntry }) {
  const at = entry.sendAt
  const where = at ? entry.summary.indexOf(at) : -1
  if (!at || where < 0) return <>{entry.summary}</>
  return (
    <>
      {entry.summary.slice(0, where)}
      <Time at={at} />
      {entry.summary.slice(where + at.length)}
    </>
  )
}

/** Statuses after which nothing more happens to a message (its page stops refreshing). */
const SETTLED = new Set(['read', 'failed', 'expired', 'canceled'])

/**
 * A message page's refresh interval: every 3 s while anything can still happen to the message;
 * never once it has settled, nor once the API answered 4xx (not found stays not found: asking again
 * every 3 s for as long as the page is open would only repeat it). A 5xx or a lost connection keeps
 * asking: the API may be back.
 */
export const refreshWhileLive = (state: { data?: { message: { status: string } }; error: unknown }) => {
  if (state.error instanceof DispatchError && state.error.statusCode < 500) return false
  const status = state.data?.message.status
  return status && SETTLED.has(status) ? false : 3000
}
