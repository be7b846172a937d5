import { CAMPAIGN_STATUSES, type CampaignStatus } from '@dispatch/contracts'
import { keepPreviousData, useQuery } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { ProgressBar } from '../../portal/campaigns/progress.tsx'
import { Link } from '../../router.tsx'
import { Id } from '../../ui/id.tsx'
import { Page } from '../../ui/page.tsx'
import { Loaded, StatusBadge } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'
import { Time } from '../../ui/time.tsx'
import { useSenderOptions } from '../senders/sender-options.tsx'

/** Every key's campaigns (the API's last 100, newest first), by status; each opens its page. */
export function Campaigns() {
  const [status, setStatus] = useState<CampaignStatus | undefined>()
  // Each sender by its name, as the overview shows them; its id until the senders are read.
  const senders = useSenderOptions()
  const senderName = (senderId: string) =>
    senders.find((sender) => sender.id === senderId)?.displayName ?? senderId
  const campaigns = useQuery({
    queryKey: ['campaigns', 'admin-list', status],
    queryFn: () => api.GET('/api/admin/campaigns', { params: { query: status ? { status } : {} } }),
    placeholderData: keepPreviousData,
    refetchInterval: 5000,
  })
  return (
    <Page title="Campaigns">
      <div class="row">
        <label>
          Status
          <select
            value={status ?? ''}
            onChange={(event) => {
              const value = event.currentTarget.value
              setStatus(value === '' ? undefined : (value as CampaignStatus))
            }}
          >
            <option value="">Every status</option>
            {CAMPAIGN_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      <Loaded query={campaigns}>
        {({ data }) => (
          <Table
            caption="Campaigns"
            empty={status ? `No ${status} campaign.` : 'No campaign yet: a key creates its own.'}
            rows={data}
            rowKey={(campaign) => campaign.id}
            rowLink={(campaign) => `/campaigns/${campaign.id}`}
            columns={[
              {
                header: 'Name',
                cell: (campaign) => campaign.name,
                // A template's name is one word: the column widens for it rather than break it.
                detail: (campaign) => (
                  <span class="nowrap">
                    {campaign.template.templateId} ({campaign.template.language})
                  </span>
                ),
                class: 'wrap',
              },
              {
                header: 'Key',
                cell: (campaign) => (
                  <Link href={`/keys/${campaign.apiKeyId}`}>{campaign.clientName ?? 'Key'}</Link>
                ),
                detail: (campaign) => <Id value={campaign.apiKeyId} copy="key id" />,
              },
              {
                header: 'Sender',
                cell: (campaign) => (
                  <Link href={`/senders/${campaign.senderId}`}>{senderName(campaign.senderId)}</Link>
                ),
              },
              { header: 'Status', cell: (campaign) => <StatusBadge status={campaign.status} /> },
              { header: 'Progress', cell: (campaign) => <ProgressBar campaign={campaign} /> },
              { header: 'Failed', cell: (campaign) => campaign.counts.failed },
              { header: 'Created', cell: (campaign) => <Time at={campaign.createdAt} /> },
            ]}
          />
        )}
      </Loaded>
    </Page>
  )
}
