import { useEffect, useRef } from 'preact/hooks'
import type uPlot from 'uplot'
import { chartWidth, useChartWidth } from '../../ui/chart-width.ts'

export interface MinuteCounts {
  minute: string
  counts: Record<string, number>
}

const COLORS: Record<string, string> = {
  queued: '#6b7280',
  scheduled: '#8b5cf6',
  sending: '#0ea5e9',
  sent: '#2563eb',
  delivered: '#059669',
  read: '#047857',
  failed: '#dc2626',
  expired: '#d97706',
  canceled: '#9ca3af',
}

/**
 * The chart's columns: one x per bucket of the whole span (seconds), one series per status, 0 in a
 * bucket that had none of it. Every bucket is drawn, so a quiet span reads as a flat line at zero
 * and a burst as a peak in its place, not a lone point at the right edge.
 */
export function columns(
  minutes: MinuteCounts[],
  bucketSeconds: number,
  untilMs: number,
  spanSeconds: number,
) {
  const statuses = [...new Set(minutes.flatMap((m) => Object.keys(m.counts)))].sort()
  const last = Math.floor(untilMs / 1000 / bucketSeconds) * bucketSeconds
  const first = last - Math.ceil(spanSeconds / bucketSeconds) * bucketSeconds
  const x: number[] = []
  for (let at = first; at <= last; at += bucketSeconds) x.push(at)
  const byBucket = new Map(minutes.map((m) => [Math.floor(Date.parse(m.minute) / 1000), m.counts]))
  const series = statuses.map((status) => x.map((at) => byBucket.get(at)?.[status] ?? 0))
  return { statuses, data: [x, ...series] as uPlot.AlignedData, first, last: last + bucketSeconds }
}

/**
 * Messages per minute by status, drawn by uPlot (loaded on first use, so the first page stays
 * small) as wide as its box, whatever the window's width. The table below the chart tells the same
 * to a screen reader.
 */
export function MinuteChart({
  minutes,
  bucketSeconds,
  until,
  spanSeconds,
}: {
  minutes: MinuteCounts[]
  bucketSeconds: number
  until: string
  spanSeconds: number
}) {
  const box = useRef<HTMLDivElement>(null)
  const plot = useRef<uPlot | undefined>(undefined)
  const shape = useRef('')
  useEffect(() => {
    let cancelled = false
    const { statuses, data, first, last } = columns(minutes, bucketSeconds, Date.parse(until), spanSeconds)
    void import('./uplot.ts').then(({ default: UPlot }) => {
      if (cancelled || !box.current) return
      // The same statuses: new data on the same chart; otherwise a chart with the new series.
      const shapeNow = `${statuses.join()} ${bucketSeconds}`
      if (plot.current && shape.current === shapeNow) {
        plot.current.setData(data)
        plot.current.setScale('x', { min: first, max: last })
        return
      }
      plot.current?.destroy()
      shape.current = shapeNow
      plot.current = new UPlot(
        {
          width: chartWidth(box.current),
          height: 260,
          series: [
            {},
            ...statuses.map((status) => ({ label: status, stroke: COLORS[status] ?? '#111827', width: 2 })),
          ],
          axes: [
            {},
            {
              label: `messages / ${bucketSeconds === 60 ? 'minute' : bucketSeconds === 3600 ? 'hour' : `${bucketSeconds / 60} min`}`,
            },
          ],
          // The legend names the series; values under the cursor would read "--" until hovered.
          legend: { live: false },
          // The whole span, however few buckets had messages.
          scales: { x: { time: true, range: () => [first, last] } },
        },
        data,
        box.current,
      )
    })
    return () => {
      cancelled = true
    }
  }, [minutes, bucketSeconds, until, spanSeconds])
  useChartWidth(box, plot)
  useEffect(() => () => plot.current?.destroy(), [])
  return <div ref={box} class="chart" role="img" aria-label="Messages by status over the chosen range" />
}
