import type { Campaign } from '@dispatch/contracts'
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { count } from '../../ui/format.ts'
import { Section } from '../../ui/page.tsx'
import { ErrorNote, Outcome } from '../../ui/status.tsx'
import { type AudienceFormat, bodyText, type PreviewRow, readPreview } from './audience-preview.ts'
import { useCampaignAction } from './campaign-controls.tsx'
import { keyCampaigns } from './campaign-source.ts'
import { Preview, useLineOutcomes } from './preview-table.tsx'
import { uploadAudience } from './upload.ts'

interface Chosen {
  file: File
  format: AudienceFormat
  rows: PreviewRow[]
}
/** The template's body text, for the preview: the key's catalog entry of the campaign's template. */
function useTemplateBody(template: Campaign['template']) {
  return useQuery({
    queryKey: ['templates', 'one', template.templateId, template.language],
    queryFn: async () => {
      const { data } = await api.GET('/api/third-party/templates', {
        params: {
          query: {
            page: 1,
            take: 1,
            name: template.templateId,
            language: template.language,
            orderField: 'name',
          },
        },
      })
      return data[0] ? bodyText(data[0].components) : null
    },
    staleTime: 60_000,
  })
}
/** What the upload took and skipped, and the skipped lines' report. */
function AudienceSummary({ campaign }: { campaign: Campaign }) {
  const audience = campaign.audience
  if (!audience) return <p class="muted">No audience uploaded yet.</p>
  const reasons = Object.entries(audience.skippedByReason).filter(([, n]) => n > 0)
  return (
    <div role="status" aria-label="Uploaded audience">
      <p>
        <strong>{count(audience.taken, 'recipient')} taken</strong>, {audience.skipped} skipped, of{' '}
        {count(audience.rows, 'row')} ({audience.format.toUpperCase()}).
        {reasons.length > 0
          ? ` Skipped: ${reasons.map(([r, n]) => `${r.replace(/_/g, ' ')} ${n}`).join(', ')}.`
          : ''}
      </p>
      {audience.skipped > 0 ? (
        <p>
          <a href={`/api/third-party/campaigns/${campaign.id}/skipped`} download>
            Download the skipped lines (CSV)
          </a>
        </p>
      ) : null}
    </div>
  )
}
/**
 * A draft's or a ready campaign's audience: choose a CSV or NDJSON file (its first rows previewed
 * with the template at once), upload it (streamed from disk), see what was taken and skipped, start.
 * A new upload replaces the previous audience whole.
 */
export function CampaignAudience({ campaign }: { campaign: Campaign }) {
  const client = useQueryClient()
  const [chosen, setChosen] = useState<Chosen | undefined>()
  const [readError, setReadError] = useState<unknown>()
  const [sent, setSent] = useState(0)
  const body = useTemplateBody(campaign.template)
  const start = useCampaignAction(keyCampaigns, campaign.id)
  const upload = useMutation({
    mutationFn: (file: Chosen) =>
      uploadAudience(campaign.id, file.file, file.format, (loaded, total) =>
        setSent(total > 0 ? Math.floor((loaded / total) * 100) : 0),
      ),
    onSettled: () => client.invalidateQueries({ queryKey: ['campaigns'] }),
  })
  // The lines' outcomes belong to this file only once it is the one uploaded.
  const outcomes = useLineOutcomes(
    campaign.id,
    chosen?.rows ?? [],
    upload.isSuccess ? campaign.audience?.uploadedAt : undefined,
  )
  const choose = async (file: File | undefined) => {
    setChosen(undefined)
    setReadError(undefined)
    upload.reset()
    if (!file) return
    try {
      setChosen({ file, ...(await readPreview(file)) })
    } catch (error) {
      setReadError(error)
    }
  }
  return (
    <Section title="Audience">
      <p>
        A CSV with a header row — <code>phone</code> (or <code>userId</code>), then one column per variable of
        the template's body — or NDJSON, one <code>{'{"phone": …, "variables": {…}}'}</code> a line.
      </p>
      <form
        class="row"
        aria-label="Upload the audience"
        onSubmit={(event) => {
          event.preventDefault()
          if (chosen) upload.mutate(chosen)
        }}
      >
        <label>
          Audience file (CSV or NDJSON)
          <input
            name="audience"
            type="file"
            accept=".csv,.ndjson,.jsonl,text/csv,application/x-ndjson"
            required
            onChange={(event) => void choose(event.currentTarget.files?.[0])}
          />
        </label>
        <button type="submit" disabled={!chosen || upload.isPending}>
          {campaign.audience ? 'Upload, replacing the audience' : 'Upload'}
        </button>
        {upload.isPending ? (
          <progress max={100} value={sent} aria-label="Upload">
            {sent} %
          </progress>
        ) : null}
      </form>
      {readError ? <ErrorNote error={readError} /> : null}
      <Outcome mutation={upload} done="Uploaded." />
      {chosen ? (
        <>
          <h3>Preview: the first rows of {chosen.file.name}</h3>
          <Preview
            rows={chosen.rows}
            body={body.data}
            outcomes={upload.isSuccess ? outcomes.data : undefined}
          />
        </>
      ) : null}
      <AudienceSummary campaign={campaign} />
      {campaign.status === 'ready' ? (
        <div class="row">
          <button type="button" disabled={start.isPending} onClick={() => start.mutate('start')}>
            {campaign.startAt && Date.parse(campaign.startAt) > Date.now()
              ? 'Start at its start time'
              : 'Start'}
          </button>
          <Outcome mutation={start} />
        </div>
      ) : null}
    </Section>
  )
}
