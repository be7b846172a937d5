import { useQuery } from '@tanstack/preact-query'
import { api } from '../../api.ts'
import { Link } from '../../router.tsx'
import { Page } from '../../ui/page.tsx'
import { Loaded, StatusBadge } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'
import { Time } from '../../ui/time.tsx'
import { ProgressBar } from './progress.tsx'

/** The key's campaigns (the API's last 100, newest first), each with its progress. */
export function Campaigns() {
  const campaigns = useQuery({
    queryKey: ['campaigns', 'list'],
    queryFn: () => api.GET('/api/third-party/campaigns'),
    refetchInterval: 5000,
  })
  return (
    <Page
      title="Campaigns"
      actions={
        <Link class="button" href="/campaigns/new">
          New campaign
        </Link>
      }
    >
      <Loaded query={campaigns}>
        {({ data }) => (
          <Table
            caption="Campaigns"
            empty="No campaign yet: start with New campaign."
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
