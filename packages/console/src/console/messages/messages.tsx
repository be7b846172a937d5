import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api, paging } from '../../api.ts'
import { navigate, useLocation } from '../../router.tsx'
import { count } from '../../ui/format.ts'
import { MessagesTable } from '../../ui/messages-table.tsx'
import { Page } from '../../ui/page.tsx'
import { Pager } from '../../ui/pager.tsx'
import { Loaded, Outcome } from '../../ui/status.tsx'
import { searchFromAddress, searchFromForm, toAddress, toQuery } from './search.ts'
import { MessageSearchForm } from './search-form.tsx'

/** The most failed messages one "retry all" asks the API to retry. */
const RETRY_LIMIT = 1000

/** Every key's messages, searched by the API; every failed one matching the search can be retried. */
export function Messages() {
  const client = useQueryClient()
  const location = useLocation()
  const search = searchFromAddress(location.search)
  const [page, setPage] = useState(1)
  const messages = useQuery({
    queryKey: ['messages', 'admin', search, page],
    queryFn: () =>
      api.GET('/api/admin/messages', { params: { query: { ...paging(page), ...toQuery(search) } } }),
    placeholderData: keepPreviousData,
  })
  // A bulk retry takes no channel: searching by one, the button would retry more than is listed.
  const { channel } = search
  const retryAll = useMutation({
    mutationFn: () => {
      const { status: _status, channel: _channel, ...retryable } = toQuery(search)
      return api.POST('/api/admin/messages/retry', { body: { ...retryable, limit: RETRY_LIMIT } })
    },
    onSuccess: () => client.invalidateQueries({ queryKey: ['messages'] }),
  })
  return (
    <Page title="Messages">
      <MessageSearchForm
        admin
        search={search}
        onSearch={(form) => {
          setPage(1)
          navigate(`/messages${toAddress(searchFromForm(form))}`, { replace: true })
        }}
      />
      <div class="row">
        <button
          type="button"
          class="secondary"
          disabled={retryAll.isPending || channel !== undefined}
          onClick={() => {
            if (window.confirm(`Retry every failed message matching this search (at most ${RETRY_LIMIT})?`))
              retryAll.mutate()
          }}
        >
          Retry every failed message matching
        </button>
        <Outcome
          mutation={retryAll}
          done={retryAll.data ? `${count(retryAll.data.retried, 'message')} retried.` : ''}
        />
      </div>
      <Loaded query={messages}>
        {(result) => (
          <>
            <p class="muted" role="status">
              {result.itemCountExact ? '' : 'about '}
              {count(result.itemCount, 'message')}
            </p>
            <MessagesTable
              rows={result.data}
              showKey
              searched={Object.keys(search).length > 0}
              none="No message yet: messages appear here as keys send them."
            />
            <Pager {...result} onPage={setPage} />
          </>
        )}
      </Loaded>
    </Page>
  )
}
