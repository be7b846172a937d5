import type { UpdateSenderBody } from '@dispatch/contracts'
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { api, paging } from '../../api.ts'
import { MessagingLimitFacts } from '../../portal/campaigns/messaging-limit.tsx'
import { Link } from '../../router.tsx'
import { integer, text } from '../../ui/format.ts'
import { Page, Section } from '../../ui/page.tsx'
import { Loaded, Outcome, StatusBadge } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'
import { Time } from '../../ui/time.tsx'
import { SenderSettingsForm } from './sender-settings.tsx'
import { TemplatePreview } from './template-preview.tsx'

type SenderChange = UpdateSenderBody

/** One sender: its state and health, its rate, its token, its templates and its suppression list. */
export function SenderDetail({ id }: { id: string }) {
  const client = useQueryClient()
  const sender = useQuery({
    queryKey: ['senders', 'detail', id],
    queryFn: () => api.GET('/api/admin/senders/{id}', { params: { path: { id } } }),
  })
  const templates = useQuery({
    queryKey: ['senders', 'templates', id],
    queryFn: () =>
      api.GET('/api/admin/senders/{id}/templates', {
        params: { path: { id }, query: { ...paging(1, 100), orderField: 'updatedAt' } },
      }),
  })
  const suppressions = useQuery({
    queryKey: ['senders', 'suppressions', id],
    queryFn: () =>
      api.GET('/api/admin/suppressions', { params: { query: { ...paging(1, 50), senderId: id } } }),
  })
  const change = useMutation({
    mutationFn: (body: SenderChange) =>
      api.PATCH('/api/admin/senders/{id}', { params: { path: { id } }, body }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['senders'] }),
  })
  const settings = useMutation({
    mutationFn: (body: SenderChange) =>
      api.PATCH('/api/admin/senders/{id}', { params: { path: { id } }, body }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['senders'] }),
  })
  const sync = useMutation({
    mutationFn: () => api.POST('/api/admin/senders/{id}/templates/sync', { params: { path: { id } } }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['senders', 'templates', id] }),
  })
  const submit = (build: (form: FormData) => SenderChange) => (event: SubmitEvent) => {
    event.preventDefault()
    const form = event.currentTarget as HTMLFormElement
    change.mutate(build(new FormData(form)))
    form.reset()
  }
  return (
    <Page title="Sender">
      <p>
        <Link href="/senders">All senders</Link>
      </p>
      <Loaded query={sender}>
        {(data) => (
          <>
            <dl class="facts">
              <dt>Name</dt>
              <dd>{data.displayName}</dd>
              <dt>Phone number id</dt>
              <dd>
                <code>{data.phoneNumberId}</code> {data.displayPhoneNumber ?? ''}
              </dd>
              <dt>State</dt>
              <dd>
                <StatusBadge status={data.state} /> {data.stateReason ?? ''}
              </dd>
              <dt>Rate</dt>
              <dd>{data.ratePerSecond} messages per second</dd>
              <dt>Quality</dt>
              <dd>{data.health.qualityRating ?? '—'}</dd>
              <dt>Account</dt>
              <dd>
                {data.health.accountStatus ?? '—'} {data.health.messagingLimitTier ?? ''}
              </dd>
              <dt>Token</dt>
              <dd>{data.accessTokenLast4 ? `…${data.accessTokenLast4}` : '—'}</dd>
            </dl>
            <Section title="Messaging limit">
              <MessagingLimitFacts view={data.messagingLimit} portfolio />
            </Section>
            <Section title="Change">
              <div class="row">
                {data.state === 'active' ? (
                  <button type="button" class="danger" onClick={() => change.mutate({ state: 'paused' })}>
                    Pause sender
                  </button>
                ) : (
                  <button type="button" onClick={() => change.mutate({ state: 'active' })}>
                    Activate sender
                  </button>
                )}
              </div>
              <form
                class="row"
                aria-label="Rate"
                onSubmit={submit((form) => ({
                  ratePerSecond: integer(form, 'ratePerSecond') ?? data.ratePerSecond,
                }))}
              >
                <label>
                  Rate per second
                  <input
                    name="ratePerSecond"
                    type="number"
                    min="1"
                    required
                    defaultValue={String(data.ratePerSecond)}
                  />
                </label>
                <button type="submit">Save rate</button>
              </form>
              <form
                class="row"
                aria-label="Rotate token"
                onSubmit={submit((form) => ({ accessToken: text(form, 'accessToken') ?? '' }))}
              >
                <label>
                  New access token
                  <input name="accessToken" type="password" autocomplete="off" required />
                </label>
                <button type="submit">Rotate token</button>
              </form>
              <Outcome mutation={change} done="Saved." />
            </Section>
            <Section title="Settings">
              <SenderSettingsForm
                key={data.updatedAt}
                sender={data}
                pending={settings.isPending}
                onSave={(body) => settings.mutate(body)}
              />
              <Outcome mutation={settings} done="Settings saved." />
            </Section>
          </>
        )}
      </Loaded>
      <Section title="Templates">
        <button type="button" class="secondary" onClick={() => sync.mutate()} disabled={sync.isPending}>
          Sync templates from Meta
        </button>
        <Outcome
          mutation={sync}
          done={
            sync.data
              ? `Templates synced: ${sync.data.added} added, ${sync.data.changed} changed, ${sync.data.removed} removed; ${sync.data.total} in all.`
              : ''
          }
        />
        <Loaded query={templates}>
          {(result) => (
            <Table
              caption="Templates"
              empty={
                <>
                  No template yet: <strong>Sync templates from Meta</strong> reads this sender's catalog (the
                  sender needs its WhatsApp Business Account id, under Settings).
                </>
              }
              rows={result.data}
              rowKey={(template) => template.id}
              columns={[
                { header: 'Name', cell: (template) => template.name },
                { header: 'Language', cell: (template) => template.language },
                { header: 'Category', cell: (template) => template.category ?? '—' },
                {
                  header: 'Status',
                  cell: (template) => (
                    <>
                      <StatusBadge status={template.status.toLowerCase()} />
                      {template.rejectedReason ? ` ${template.rejectedReason}` : ''}
                    </>
                  ),
                },
                { header: 'Quality', cell: (template) => template.quality ?? '—' },
                {
                  header: 'Preview',
                  class: 'wrap',
                  cell: (template) => <TemplatePreview template={template} />,
                },
              ]}
            />
          )}
        </Loaded>
      </Section>
      <Section title="Suppression list">
        <Loaded query={suppressions}>
          {(result) => (
            <Table
              empty="No one has opted out."
              rows={result.data}
              rowKey={(entry) => entry.id}
              columns={[
                { header: 'Recipient', cell: (entry) => entry.recipient },
                { header: 'Scope', cell: (entry) => entry.scope },
                { header: 'Source', cell: (entry) => entry.source },
                { header: 'Since', cell: (entry) => <Time at={entry.createdAt} /> },
              ]}
            />
          )}
        </Loaded>
      </Section>
    </Page>
  )
}
