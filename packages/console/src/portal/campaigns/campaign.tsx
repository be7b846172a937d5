import { DispatchError } from '@dispatch/client'
import { CAMPAIGN_RECIPIENT_STATES, type Campaign } from '@dispatch/contracts'
import { useQuery } from '@tanstack/preact-query'
import { useEffect, useState } from 'preact/hooks'
import { Link } from '../../router.tsx'
import { ErrorTitle } from '../../ui/error-code.tsx'
import { CopyButton, Id } from '../../ui/id.tsx'
import { Page, Section } from '../../ui/page.tsx'
import { Loaded, StatusBadge } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'
import { Time } from '../../ui/time.tsx'
import { CampaignAudience } from './campaign-audience.tsx'
import { CampaignControls } from './campaign-controls.tsx'
import { CampaignRecipients } from './campaign-recipients.tsx'
import type { CampaignSource } from './campaign-source.ts'
import { MessagingLimit } from './messaging-limit.tsx'
import { ProgressBar } from './progress.tsx'
import { addSample, ProgressChart, type Sample, samplesFor } from './progress-chart.tsx'

/**
 * How often the page reads the campaign, by status: every 3 s while its counts move (a paused
 * campaign's fed messages still do), every 15 s while it waits for its start; not once it has ended
 * (nor a draft or a ready one, which change only by this page's own hand).
 */
const REFRESH_MS: Partial<Record<Campaign['status'], number>> = {
  running: 3000,
  paused: 3000,
  scheduled: 15_000,
}

function Facts({ campaign, own }: { campaign: Campaign; own: boolean }) {
  const { template } = campaign
  return (
    <dl class="facts">
      <dt>Id</dt>
      <dd>
        <Id value={campaign.id} /> <CopyButton value={campaign.id} label="campaign id" />
      </dd>
      {own ? null : (
        <>
          <dt>Key</dt>
          <dd>
            <Link href={`/keys/${campaign.apiKeyId}`}>{campaign.clientName ?? 'Key'}</Link>{' '}
            <Id value={campaign.apiKeyId} copy="key id" />
          </dd>
          <dt>Sender</dt>
          <dd>
            <Link href={`/senders/${campaign.senderId}`}>{campaign.senderId}</Link>
          </dd>
        </>
      )}
      <dt>Status</dt>
      <dd>
        <StatusBadge status={campaign.status} />
      </dd>
      {campaign.waitingFor ? (
        <>
          <dt>Waiting</dt>
          <dd>
            The key's daily quota is spent; it goes on at <Time at={campaign.waitingFor.until} />
          </dd>
        </>
      ) : null}
      <dt>Template</dt>
      <dd>
        {template.templateId} ({template.language})
      </dd>
      <dt>Progress</dt>
      <dd>
        <ProgressBar campaign={campaign} />
      </dd>
      <dt>Created</dt>
      <dd>
        <Time at={campaign.createdAt} />
      </dd>
      {campaign.startAt ? (
        <>
          <dt>Starts at</dt>
          <dd>
            <Time at={campaign.startAt} />
          </dd>
        </>
      ) : null}
      <dt>Started</dt>
      <dd>
        <Time at={campaign.startedAt} />
      </dd>
      <dt>{campaign.canceledAt ? 'Canceled' : 'Completed'}</dt>
      <dd>
        <Time at={campaign.canceledAt ?? campaign.completedAt} />
      </dd>
    </dl>
  )
}

function Counts({ campaign }: { campaign: Campaign }) {
  return (
    <Table
      caption="Recipients by state"
      rows={[...CAMPAIGN_RECIPIENT_STATES]}
      rowKey={(state) => state}
      columns={[
        { header: 'State', cell: (state) => <StatusBadge status={state} /> },
        { header: 'Recipients', cell: (state) => campaign.counts[state] },
      ]}
    />
  )
}

/** Beside the states: who wrote back or opted out since it started, and what the platform bills. */
function Engagement({ campaign }: { campaign: Campaign }) {
  const { engagement, pricing } = campaign
  const categories = Object.entries(pricing.byCategory).filter(([, n]) => n > 0)
  return (
    <dl class="facts">
      <dt>Replied</dt>
      <dd>{engagement.replied}</dd>
      <dt>Opted out since</dt>
      <dd>{engagement.optedOut}</dd>
      <dt>Billable messages</dt>
      <dd>
        {pricing.billable}
        {categories.length > 0 ? (
          <span class="muted"> ({categories.map(([category, n]) => `${category} ${n}`).join(', ')})</span>
        ) : null}
      </dd>
    </dl>
  )
}

function Failures({ failedByCode }: { failedByCode: Campaign['failedByCode'] }) {
  const rows = Object.entries(failedByCode).sort(([, a], [, b]) => b - a)
  return (
    <Table
      caption="Failures by error code"
      empty="No failure."
      rows={rows}
      rowKey={([code]) => code}
      columns={[
        { header: 'Error code', cell: ([code]) => <code>{code}</code> },
        { header: 'Recipients', cell: ([, n]) => n },
        { header: 'What it means', class: 'wrap', cell: ([code]) => <ErrorTitle code={code} /> },
      ]}
    />
  )
}

/** Every row with its outcome, streamed by the API as a download (the session's cookie goes along). */
function Exports({ id, source }: { id: string; source: CampaignSource }) {
  const base = `${source.base}/${id}/export`
  return (
    <div class="row">
      <a class="button secondary" href={`${base}?format=csv`} download>
        Export CSV
      </a>
      <a class="button secondary" href={`${base}?format=ndjson`} download>
        Export NDJSON
      </a>
    </div>
  )
}

/**
 * One campaign: while a draft or ready, its audience (upload, preview, start); then its counts by
 * state, a chart of them from its start and as the page reads them, its failures by code, its recipients and
 * its exports; pause, resume and cancel; in the portal, the sender's messaging limit beside it.
 * The console shows any key's campaign (read, paused, resumed, canceled; the key alone uploads and
 * starts).
 */
export function CampaignPage({ id, source }: { id: string; source: CampaignSource }) {
  const campaign = useQuery({
    queryKey: ['campaigns', 'detail', id],
    queryFn: () => source.get(id),
    refetchInterval: (query) =>
      query.state.error instanceof DispatchError && query.state.error.statusCode < 500
        ? false
        : query.state.data
          ? (REFRESH_MS[query.state.data.status] ?? false)
          : 3000,
  })
  const [samples, setSamples] = useState<Sample[]>(() => samplesFor(id))
  useEffect(() => {
    const data = campaign.data
    if (data && data.status !== 'draft' && data.status !== 'ready') {
      setSamples(addSample(data, campaign.dataUpdatedAt))
    }
  }, [campaign.dataUpdatedAt])
  return (
    <Page title={campaign.data ? `Campaign ${campaign.data.name}` : 'Campaign'}>
      <p>
        <Link href="/campaigns">All campaigns</Link>
      </p>
      <Loaded query={campaign}>
        {(data) => (
          <>
            <div class="grid">
              <div>
                <Facts campaign={data} own={source.own} />
                <CampaignControls campaign={data} source={source} />
              </div>
              {source.own ? <MessagingLimit /> : null}
            </div>
            {source.own && (data.status === 'draft' || data.status === 'ready') ? (
              <CampaignAudience campaign={data} />
            ) : null}
            {data.status !== 'draft' && data.status !== 'ready' ? (
              <>
                <div class="grid">
                  <Section title="Recipients by state">
                    <Counts campaign={data} />
                    <Engagement campaign={data} />
                  </Section>
                  <Section title="Progress">
                    <ProgressChart samples={samples} />
                  </Section>
                </div>
                <Section title="Failures by error code">
                  <Failures failedByCode={data.failedByCode} />
                </Section>
              </>
            ) : null}
            {data.audience ? (
              <Section title="Recipients">
                <CampaignRecipients
                  id={id}
                  source={source}
                  version={`${data.status} ${JSON.stringify(data.counts)}`}
                />
                <Exports id={id} source={source} />
              </Section>
            ) : null}
          </>
        )}
      </Loaded>
    </Page>
  )
}
