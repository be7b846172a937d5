/** How a benchmark prints the time a step took and the size of what it made. */

/** Seconds since `since` (a `performance.now()`), with `digits` decimals. */
export const secondsSince = (since: number, digits = 0) =>
  `${((performance.now() - since) / 1000).toFixed(digits)} s`

/** A row count in millions: `10 M`, `2.5 M`. */
export const millions = (n: number) =>
  `${(n / 1_000_000).toLocaleString('en-US', { maximumFractionDigits: 2 })} M`
