import { formatTime } from './format.ts'

/**
 * A moment as every page shows it: in the viewer's time zone, one format everywhere, the exact
 * UTC instant on hover (and to a screen reader, through the element's datetime).
 */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <>—</>
  return (
    <time dateTime={at} title={`${at.replace('T', ' ').replace(/\.\d+Z$|Z$/, '')} UTC`}>
      {formatTime(at)}
    </time>
  )
}
