/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** The samples of a Prometheus text exposition (comments left out). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line)
    if (!match) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, name, value] of (match[2] ?? '').matchAll(
      /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g,
    )) {
      labels[name as string] = (value as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) })
  }
  return samples
}

/**
 * The value of the one sample of `name` whose labels include `labels`; throws when there is none or
 * more than one, so a test names exactly the series it means.
 */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string>): number {
  const found = samplesOf(samples, name, labels)
  if (found.length !== 1) {
    throw new Error(`${found.length} samples of ${name}${JSON.stringify(labels)}`)
  }
  return (found[0] as Sample).value
}

/** The samples of `name` whose labels include `labels`: none while a counter has not counted yet. */
export function samplesOf(samples: Sample[], name: string, labels: Record<string, string>): Sample[] {
  return samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([label, value]) => s.labels[label] === value),
  )
}
