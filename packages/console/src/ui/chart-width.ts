import { useEffect } from 'preact/hooks'
import type uPlot from 'uplot'

/** How wide a chart is drawn in its box: the box's width, 320 px at least (narrower, the axes crowd the plot). */
export const chartWidth = (box: HTMLElement) => Math.max(320, box.clientWidth)

/**
 * Keeps a uPlot chart as wide as its box: uPlot draws at a width in pixels and keeps it, so each
 * time the box changes size (the window resized, the page's layout reflowed) the chart is set to
 * the box's width again; the observer ends with the component. `plot` is empty while uPlot loads:
 * the chart drawn then reads the box's width itself.
 */
export function useChartWidth(
  box: { readonly current: HTMLElement | null },
  plot: { readonly current: uPlot | undefined },
) {
  useEffect(() => {
    const element = box.current
    if (!element) return
    const observer = new ResizeObserver(() => {
      const chart = plot.current
      const width = chartWidth(element)
      // The height stays the chart's own. Only a new width redraws: the legend re-wrapping changes
      // the box's height, which calls this again, and must not loop.
      if (chart && chart.width !== width) chart.setSize({ width, height: chart.height })
    })
    observer.observe(element)
    return () => observer.disconnect()
  }, [box, plot])
}
