import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api, paging } from '../../api.ts'
import { navigate } from '../../router.tsx'
import { integer, text } from '../../ui/format.ts'
import { Page, Section } from '../../ui/page.tsx'
import { Pager } from '../../ui/pager.tsx'
import { Loaded, Outcome, StatusBadge } from '../../ui/status.tsx'
import { Table } from '../../ui/table.tsx'

/** The senders (WhatsApp numbers), and a form to add one. */
export function Senders() {
  const client = useQueryClient()
  const [page, setPage] = useState(1)
  const senders = useQuery({
    queryKey: ['senders', 'list', page],
    queryFn: () => api.GET('/api/admin/senders', { params: { query: paging(page) } }),
    placeholderData: keepPreviousData,
  })
  const create = useMutation({
    mutationFn: (form: FormData) =>
      api.POST('/api/admin/senders', {
        body: {
          phoneNumberId: text(form, 'phoneNumberId') ?? '',
          displayName: text(form, 'displayName') ?? '',
          accessToken: text(form, 'accessToken') ?? '',
          ...(text(form, 'displayPhoneNumber')
            ? { displayPhoneNumber: text(form, 'displayPhoneNumber') }
            : {}),
          ...(integer(form, 'ratePerSecond') ? { ratePerSecond: integer(form, 'ratePerSecond') } : {}),
          ...(text(form, 'wabaId') ? { wabaId: text(form, 'wabaId') } : {}),
        },
      }),
    onSuccess: async (sender) => {
      await client.invalidateQueries({ queryKey: ['senders'] })
      navigate(`/senders/${sender.id}`)
    },
  })
  return (
    <Page title="Senders">
      <Loaded query={senders}>
        {(result) => (
          <>
            <Table
              rows={result.data}
              rowKey={(sender) => sender.id}
              rowLink={(sender) => `/senders/${sender.id}`}
              columns={[
                { header: 'Sender', cell: (sender) => sender.displayName },
                { header: 'Phone number id', cell: (sender) => <code>{sender.phoneNumberId}</code> },
                { header: 'State', cell: (sender) => <StatusBadge status={sender.state} /> },
                { header: 'Rate / s', cell: (sender) => sender.ratePerSecond },
                { header: 'Quality', cell: (sender) => sender.health.qualityRating ?? '—' },
                { header: 'Account', cell: (sender) => sender.health.accountStatus ?? '—' },
              ]}
            />
            <Pager {...result} onPage={setPage} />
          </>
        )}
      </Loaded>
      <Section title="Add a sender">
        <form
          class="stack narrow"
          onSubmit={(event) => {
            event.preventDefault()
            create.mutate(new FormData(event.currentTarget))
          }}
        >
          <label>
            Display name
            <input name="displayName" required />
          </label>
          <label>
            Phone number id (Meta)
            <input name="phoneNumberId" required inputMode="numeric" />
          </label>
          <label>
            Display phone number
            <input name="displayPhoneNumber" />
          </label>
          <label>
            Access token
            <input name="accessToken" type="password" autocomplete="off" required />
          </label>
          <label>
            Rate per second
            <input name="ratePerSecond" type="number" min="1" />
          </label>
          <label>
            WABA id
            <input name="wabaId" />
          </label>
          <button type="submit" disabled={create.isPending}>
            Add sender
          </button>
          <Outcome mutation={create} />
        </form>
      </Section>
    </Page>
  )
}
