import { CAMPAIGN_RECIPIENT_STATES, type CampaignRecipientState, errorTitle } from '@dispatch/contracts'
import { keepPreviousData, useQuery } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { Link } from '../../router.tsx'
import { ErrorTitle } from '../../ui/error-code.tsx'
import { Id } from '../../ui/id.tsx'
import { Loaded, StatusBadge } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'
import type { CampaignSource } from './campaign-source.ts'

const TAKE = 25

/**
 * The campaign's recipients in line order, filtered by state, a page at a time: the API pages by
 * line (`after` the previous page's last), so going back is the page's own memory of where each
 * page began. `version` changes when the campaign's counts do: the page shown is read again then.
 */
export function CampaignRecipients({
  id,
  version,
  source,
}: {
  id: string
  version: string
  source: CampaignSource
}) {
  const [state, setState] = useState<CampaignRecipientState | undefined>()
  /** Where each page so far began: the last is the page shown. */
  const [starts, setStarts] = useState<number[]>([0])
  const after = starts.at(-1) ?? 0
  const recipients = useQuery({
    queryKey: ['campaigns', 'recipients', id, state, after, version],
    queryFn: () => source.recipients(id, { take: TAKE, after, ...(state ? { state } : {}) }),
    placeholderData: keepPreviousData,
  })
  return (
    <>
      <div class="row">
        <label>
          State
          <select
            value={state ?? ''}
            onChange={(event) => {
              const value = event.currentTarget.value
              setState(value === '' ? undefined : (value as CampaignRecipientState))
              setStarts([0])
            }}
          >
            <option value="">Every state</option>
            {CAMPAIGN_RECIPIENT_STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      <Loaded query={recipients}>
        {({ data, next }) => (
          <>
            <Table
              caption="Recipients"
              empty={state ? `No recipient is ${state}.` : 'No recipient yet.'}
              rows={data}
              rowKey={(r) => String(r.line)}
              columns={[
                { header: 'Line', cell: (r) => r.line },
                { header: 'Recipient', cell: (r) => r.phone ?? r.userId ?? '—' },
                { header: 'State', cell: (r) => <StatusBadge status={r.state} /> },
                {
                  header: 'Why',
                  class: 'wrap',
                  cell: (r) =>
                    r.errorCode ? <code>{r.errorCode}</code> : r.reason ? r.reason.replace(/_/g, ' ') : '—',
                  detail: (r) =>
                    r.errorCode ? errorTitle(r.errorCode) && <ErrorTitle code={r.errorCode} /> : r.detail,
                },
                {
                  header: 'Message',
                  cell: (r) =>
                    r.messageId ? (
                      <Link href={`/messages/${r.messageId}`}>
                        <Id value={r.messageId} />
                      </Link>
                    ) : (
                      '—'
                    ),
                },
              ]}
            />
            {starts.length > 1 || next !== null ? (
              <nav class="pager" aria-label="Recipient pages">
                <button
                  type="button"
                  disabled={starts.length <= 1}
                  onClick={() => setStarts(starts.slice(0, -1))}
                >
                  Previous page
                </button>
                <span>Page {starts.length}</span>
                <button
                  type="button"
                  disabled={next === null}
                  onClick={() => next !== null && setStarts([...starts, next])}
                >
                  Next page
                </button>
              </nav>
            ) : null}
          </>
        )}
      </Loaded>
    </>
  )
}
