import { useEffect, useRef } from 'preact/hooks'
import type uPlot from 'uplot'

export interface MinuteCounts {
  minute: string
  counts: Record<string, number>
}

const DAY_SECONDS = 86_400

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

/** The chart's columns: one x (seconds), one series per status, 0 where a minute had none of it. */
function columns(minutes: MinuteCounts[]) {
  const statuses = [...new Set(minutes.flatMap((m) => Object.keys(m.counts)))].sort()
  const x = minutes.map((m) => Date.parse(m.minute) / 1000)
  const series = statuses.map((status) => minutes.map((m) => m.counts[status] ?? 0))
  return { statuses, data: [x, ...series] as uPlot.AlignedData }
}

/**
 * Messages per minute by status, drawn by uPlot (loaded on first use, so the first page stays
 * small). The table below the chart tells the same to a screen reader.
 */
export function MinuteChart({ minutes }: { minutes: MinuteCounts[] }) {
  const box = useRef<HTMLDivElement>(null)
  const plot = useRef<uPlot | undefined>(undefined)
  const shape = useRef('')
  useEffect(() => {
    let cancelled = false
    const { statuses, data } = columns(minutes)
    void import('./uplot.ts').then(({ default: UPlot }) => {
      if (cancelled || !box.current) return
      // The same statuses: new data on the same chart; otherwise a chart with the new series.
      if (plot.current && shape.current === statuses.join()) {
        plot.current.setData(data)
        return
      }
      plot.current?.destroy()
      shape.current = statuses.join()
      plot.current = new UPlot(
        {
          width: Math.max(320, box.current.clientWidth),
          height: 260,
          series: [
            {},
            ...statuses.map((status) => ({ label: status, stroke: COLORS[status] ?? '#111827', width: 2 })),
          ],
          axes: [{}, { label: 'messages / minute' }],
          // Always the last 24 hours, however few minutes had messages.
          scales: { x: { time: true, range: () => [Date.now() / 1000 - DAY_SECONDS, Date.now() / 1000] } },
        },
        data,
        box.current,
      )
    })
    return () => {
      cancelled = true
    }
  }, [minutes])
  useEffect(() => () => plot.current?.destroy(), [])
  return <div ref={box} class="chart" role="img" aria-label="Messages per minute by status, last 24 hours" />
}
