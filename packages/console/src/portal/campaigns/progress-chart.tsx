import type { Campaign } from '@dispatch/contracts'
import { useEffect, useRef } from 'preact/hooks'
import type uPlot from 'uplot'
import { chartWidth, useChartWidth } from '../../ui/chart-width.ts'
import { gone } from './progress.tsx'

/** One reading of a campaign's counts, taken by the page as it polls. */
export interface Sample {
  /** Seconds since the epoch. */
  at: number
  sent: number
  delivered: number
  failed: number
  waiting: number
}

/** An hour of readings every 3 s: older ones fall off the left. */
const MAX_SAMPLES = 1200
/** Each campaign's readings, kept while the page is open (leaving and coming back keeps them). */
const samplesOf = new Map<string, Sample[]>()

/** The readings of a campaign so far (a copy). */
export const samplesFor = (id: string): Sample[] => [...(samplesOf.get(id) ?? [])]

/**
 * Adds the campaign's counts as read at `atMs`; answers every reading so far (a copy). The first
 * reading of a started campaign comes after one the page knows without reading: at its start,
 * every recipient its upload took was waiting and none had gone.
 */
export function addSample(
  campaign: Pick<Campaign, 'id' | 'counts' | 'startedAt' | 'audience'>,
  atMs: number,
): Sample[] {
  const { counts } = campaign
  const sample: Sample = {
    at: atMs / 1000,
    sent: gone(counts),
    delivered: counts.delivered + counts.read,
    failed: counts.failed,
    waiting: counts.pending + counts.held,
  }
  const samples = samplesOf.get(campaign.id) ?? []
  const startedAt = campaign.startedAt ? Date.parse(campaign.startedAt) : Number.NaN
  if (samples.length === 0 && startedAt < atMs) {
    const taken = campaign.audience?.taken ?? 0
    samples.push({ at: startedAt / 1000, sent: 0, delivered: 0, failed: 0, waiting: taken })
  }
  samples.push(sample)
  if (samples.length > MAX_SAMPLES) samples.splice(0, samples.length - MAX_SAMPLES)
  samplesOf.set(campaign.id, samples)
  return [...samples]
}

const SERIES: { key: keyof Omit<Sample, 'at'>; label: string; stroke: string }[] = [
  { key: 'sent', label: 'sent (and on)', stroke: '#2563eb' },
  { key: 'delivered', label: 'delivered or read', stroke: '#059669' },
  { key: 'failed', label: 'failed', stroke: '#dc2626' },
  { key: 'waiting', label: 'pending or held', stroke: '#6b7280' },
]

const columns = (samples: Sample[]) =>
  [samples.map((s) => s.at), ...SERIES.map(({ key }) => samples.map((s) => s[key]))] as uPlot.AlignedData

/**
 * The campaign's counts from its start, then as the page reads them, drawn by uPlot (the overview's
 * chart library, loaded on first use). The counts table beside it tells the same in words.
 */
export function ProgressChart({ samples }: { samples: Sample[] }) {
  const box = useRef<HTMLDivElement>(null)
  const plot = useRef<uPlot | undefined>(undefined)
  useEffect(() => {
    let cancelled = false
    void import('../../console/overview/uplot.ts').then(({ default: UPlot }) => {
      if (cancelled || !box.current) return
      if (plot.current) return plot.current.setData(columns(samples))
      plot.current = new UPlot(
        {
          width: chartWidth(box.current),
          height: 220,
          series: [{}, ...SERIES.map(({ label, stroke }) => ({ label, stroke, width: 2 }))],
          axes: [{}, { label: 'recipients' }],
          legend: { live: false },
          // A minute at least, filled from the left: seconds on the axis, not milliseconds.
          scales: { x: { time: true, range: (_, min, max) => [min, Math.max(max, min + 60)] } },
        },
        columns(samples),
        box.current,
      )
    })
    return () => {
      cancelled = true
    }
  }, [samples])
  useChartWidth(box, plot)
  useEffect(() => () => plot.current?.destroy(), [])
  const last = samples.at(-1)
  return (
    <>
      <div
        ref={box}
        class="chart small"
        role="img"
        aria-label={
          last
            ? `Progress: ${last.sent} sent, ${last.failed} failed, ${last.waiting} waiting`
            : 'Progress: no reading yet'
        }
      />
      <p class="muted">
        From its start; read every 3 seconds while it runs.
        {samples.length > 0 ? ` ${samples.length} points.` : ''}
      </p>
    </>
  )
}
