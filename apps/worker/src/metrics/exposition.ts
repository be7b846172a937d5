/**
 * Joins texts in the Prometheus exposition format into one, each metric family once: its `# HELP`
 * and `# TYPE` lines, then every sample of it from every text. BullMQ's
 * `Queue.exportPrometheusMetrics()` answers one queue at a time, each with its own HELP and TYPE
 * lines, and a scrape in which a family's TYPE line repeats is refused by Prometheus.
 * Families named in `drop` are left out.
 */
export function mergeExpositions(texts: Iterable<string>, drop: ReadonlySet<string> = new Set()): string {
  const families = new Map<string, { meta: string[]; samples: string[] }>()
  const family = (name: string) => {
    let found = families.get(name)
    if (!found) {
      found = { meta: [], samples: [] }
      families.set(name, found)
    }
    return found
  }
  for (const text of texts) {
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue
      const meta = /^# (HELP|TYPE) (\S+)/.exec(line)
      if (meta) {
        const entry = family(meta[2] as string)
        if (!entry.meta.some((seen) => seen.startsWith(`# ${meta[1]} `))) entry.meta.push(line)
        continue
      }
      if (line.startsWith('#')) continue
      const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0]
      if (name) family(name).samples.push(line)
    }
  }
  const out: string[] = []
  for (const [name, { meta, samples }] of families) {
    if (drop.has(name) || samples.length === 0) continue
    out.push(...meta, ...samples)
  }
  return out.length === 0 ? '' : `${out.join('\n')}\n`
}
