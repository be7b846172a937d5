import type { ApiKeyStatus } from '@dispatch/contracts'
import { keepPreviousData, useQuery } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api, paging } from '../../api.ts'
import { count, text } from '../../ui/format.ts'
import { Id } from '../../ui/id.tsx'
import { Page } from '../../ui/page.tsx'
import { Pager } from '../../ui/pager.tsx'
import { Loaded, StatusBadge } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'
import { Time } from '../../ui/time.tsx'

interface KeySearch {
  q?: string | undefined
  status?: ApiKeyStatus | undefined
  tenantId?: string | undefined
}

/** Every key, searched and paged by the API. */
export function Keys() {
  const [search, setSearch] = useState<KeySearch>({})
  const [page, setPage] = useState(1)
  const keys = useQuery({
    queryKey: ['api-keys', 'list', search, page],
    queryFn: () => api.GET('/api/admin/api-keys', { params: { query: { ...paging(page), ...search } } }),
    placeholderData: keepPreviousData,
  })
  return (
    <Page title="Keys">
      <search aria-label="Search keys">
        <form
          class="row"
          onSubmit={(event) => {
            event.preventDefault()
            const form = new FormData(event.currentTarget)
            setSearch({
              q: text(form, 'q'),
              status: text(form, 'status') as ApiKeyStatus | undefined,
              tenantId: text(form, 'tenantId'),
            })
            setPage(1)
          }}
        >
          <label>
            Client name, e-mail or prefix
            <input name="q" type="search" />
          </label>
          <label>
            Status
            <select name="status">
              <option value="">Any</option>
              <option value="pending">pending</option>
              <option value="approved">approved</option>
              <option value="rejected">rejected</option>
              <option value="revoked">revoked</option>
            </select>
          </label>
          <label>
            Tenant
            <input name="tenantId" />
          </label>
          <button type="submit">Search</button>
        </form>
      </search>
      <Loaded query={keys}>
        {(result) => (
          <>
            <p class="muted">{count(result.itemCount, 'key')}</p>
            <Table
              rows={result.data}
              rowKey={(key) => key.id}
              rowLink={(key) => `/keys/${key.id}`}
              columns={[
                {
                  header: 'Client',
                  cell: (key) => key.clientName,
                  detail: (key) => <Id value={key.id} copy="key id" />,
                },
                { header: 'Prefix', cell: (key) => <code>{key.keyPrefix}</code> },
                { header: 'Status', cell: (key) => <StatusBadge status={key.status} /> },
                { header: 'Tenant', cell: (key) => key.tenantId ?? '—' },
                { header: 'Created', cell: (key) => <Time at={key.createdAt} /> },
              ]}
            />
            <Pager {...result} onPage={setPage} />
          </>
        )}
      </Loaded>
    </Page>
  )
}
