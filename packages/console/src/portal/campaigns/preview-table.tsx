import { useQuery } from '@tanstack/preact-query'
import { api } from '../../api.ts'
import { FilledText } from '../../ui/filled-text.tsx'
import type { PreviewRow } from './audience-preview.ts'

/** What the upload made of the previewed lines: taken, or skipped and why (by line). */
export function useLineOutcomes(campaignId: string, rows: PreviewRow[], uploaded: string | undefined) {
  const last = rows.at(-1)?.line ?? 0
  return useQuery({
    queryKey: ['campaigns', 'recipients', campaignId, 'preview', uploaded, last],
    enabled: uploaded !== undefined && last > 0,
    queryFn: async () => {
      const { data } = await api.GET('/api/third-party/campaigns/{campaignId}/recipients', {
        params: { path: { campaignId }, query: { take: last } },
      })
      return new Map(data.map((r) => [r.line, r]))
    },
  })
}

export type Outcomes = ReturnType<typeof useLineOutcomes>['data']

function LineOutcome({ line, outcomes }: { line: number; outcomes: NonNullable<Outcomes> }) {
  const row = outcomes.get(line)
  if (!row) return <>—</>
  if (row.state !== 'skipped') return <>taken</>
  return (
    <span class="error">
      skipped: {row.reason?.replace(/_/g, ' ')}
      {row.detail ? <span class="muted"> ({row.detail})</span> : null}
    </span>
  )
}

/**
 * The first rows with the template's body filled from each, as the recipients will read it; once
 * the file is uploaded, what the upload made of each line.
 */
export function Preview({
  rows,
  body,
  outcomes,
}: {
  rows: PreviewRow[]
  body: string | null | undefined
  outcomes: Outcomes
}) {
  if (rows.length === 0) return <p class="muted">The file has no row to preview.</p>
  return (
    <table>
      <caption class="visually-hidden">The first rows, as their messages will read</caption>
      <thead>
        <tr>
          <th scope="col">Line</th>
          <th scope="col">Recipient</th>
          <th scope="col">Message</th>
          {outcomes ? <th scope="col">Upload</th> : null}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={row.line}>
            <td>{row.line}</td>
            <td>{row.recipient || '—'}</td>
            <td class="wrap">
              {row.problem ? (
                <span class="error">Cannot be read: {row.problem}</span>
              ) : body ? (
                <FilledText text={body} variables={row.variables} />
              ) : (
                <code>{JSON.stringify(row.variables)}</code>
              )}
            </td>
            {outcomes ? (
              <td>
                <LineOutcome line={row.line} outcomes={outcomes} />
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  )
}
