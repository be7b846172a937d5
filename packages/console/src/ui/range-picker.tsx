import { OVERVIEW_RANGES, type OverviewRange } from '@dispatch/contracts'

export const RANGES = Object.keys(OVERVIEW_RANGES) as OverviewRange[]

/** Whether a value (from the page address, say) names one of the spans. */
export const isRange = (value: unknown): value is OverviewRange => RANGES.includes(value as OverviewRange)

/**
 * A span back from now (1h, 24h, 7d): a button each, the chosen one pressed. `anyTime` adds a button
 * that lifts the bound (the message lists'), pressed when nothing bounds the list.
 */
export function RangePicker(props: {
  range: OverviewRange | undefined
  onChange: (range: OverviewRange) => void
  anyTime?: { pressed: boolean; onClick: () => void }
}) {
  return (
    // biome-ignore lint/a11y/useSemanticElements: a group of toggle buttons, not a form's fieldset
    <div class="range-picker" role="group" aria-label="Time range">
      {RANGES.map((range) => (
        <button
          key={range}
          type="button"
          class="secondary"
          aria-pressed={props.range === range}
          onClick={() => props.onChange(range)}
        >
          {range}
        </button>
      ))}
      {props.anyTime ? (
        <button
          type="button"
          class="secondary"
          aria-pressed={props.anyTime.pressed}
          onClick={props.anyTime.onClick}
        >
          Any time
        </button>
      ) : null}
    </div>
  )
}
