import { parseExposition, type Sample } from '@dispatch/testing'

/** One scrape of a `/metrics` endpoint, parsed. */
export async function scrape(url: string, token: string): Promise<Sample[]> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${await res.text()}`)
  return parseExposition(await res.text())
}

/** The sum of every series of one metric: a counter over all its labels. 0 when none was counted yet. */
export const total = (samples: Sample[], name: string) =>
  samples.filter((s) => s.name === name).reduce((sum, s) => sum + s.value, 0)
