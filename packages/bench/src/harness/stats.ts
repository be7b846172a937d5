/** The figures of a benchmark's samples: middle, percentiles, and two sides sampled alike. */

/** The middle value of a benchmark's rounds (the upper middle of an even count). */
export const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0

/**
 * A distribution-free interval for the median `values` were drawn from: the order statistics that
 * hold it with at least `level` confidence (the count of values under the median is binomial, p =
 * ½). For 16 rounds at 90 %: the 5th and the 12th smallest. Undefined when there are too few values
 * for that confidence (4 or fewer at 90 %). What a median of rounds may be off by on a noisy machine.
 */
export function medianInterval(values: number[], level = 0.9): [number, number] | undefined {
  const n = values.length
  const tail = (1 - level) / 2
  // j: the largest with P(B ≤ j − 1) ≤ tail, B ~ Binomial(n, ½), summed a term at a time.
  let below = 0
  let term = 0.5 ** n
  let j = 0
  for (let i = 0; i < n; i++) {
    below += term
    if (below > tail) break
    j = i + 1
    term = (term * (n - i)) / (i + 1)
  }
  if (j === 0) return undefined
  const sorted = [...values].sort((a, b) => a - b)
  return [sorted[j - 1] as number, sorted[n - j] as number]
}

/** The value 95 % of the samples stay at or under. */
export const p95 = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.95)] ?? 0

/**
 * p95 (and median) in milliseconds of `figure` and of `baseline`, sampled alternately (after a shared warm-up of
 * 30 each), so machine noise and warm-up weigh on both alike rather than on whichever runs first.
 */
export async function pairedP95(
  figure: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
  samples: number,
) {
  for (let i = 0; i < 30; i++) {
    await figure()
    await baseline()
  }
  const times = { figure: [] as number[], baseline: [] as number[] }
  const time = async (run: () => Promise<unknown>, into: number[]) => {
    const start = performance.now()
    await run()
    into.push(performance.now() - start)
  }
  for (let i = 0; i < samples; i++) {
    if (i % 2) {
      await time(figure, times.figure)
      await time(baseline, times.baseline)
    } else {
      await time(baseline, times.baseline)
      await time(figure, times.figure)
    }
  }
  return {
    figure: p95(times.figure),
    baseline: p95(times.baseline),
    medians: { figure: median(times.figure), baseline: median(times.baseline) },
  }
}

/** The value a share `q` (0–1) of the samples stay at or under: `percentile(values, 0.99)` is the p99. */
export const percentile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))] ?? 0
