import { DispatchError } from '@dispatch/client'
import { errorMeaning } from '@dispatch/contracts'
import { Time } from './time.tsx'

export interface TimelineEntry {
  at: string
  kind: string
  summary: string
  errorCode?: string
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
          <span class="tl-summary">{entry.summary}</span>
          {entry.errorCode ? <ErrorCode code={entry.errorCode} /> : null}
        </li>
      ))}
    </ol>
  )
}

/** An error code with what it means and what to do, when Dispatch knows the code. */
function ErrorCode({ code }: { code: string }) {
  const meaning = errorMeaning(code)
  return (
    <>
      <code class="tl-code">{code}</code>
      {meaning ? <span class="tl-meaning">{meaning}</span> : null}
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
