import { keepPreviousData, useQuery } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api, paging } from '../api.ts'
import { searchFromAddress, searchFromForm, toAddress, toQuery } from '../console/messages/search.ts'
import { MessageSearchForm } from '../console/messages/search-form.tsx'
import { Link, navigate, useLocation } from '../router.tsx'
import { count } from '../ui/format.ts'
import { MessagesTable } from '../ui/messages-table.tsx'
import { Page } from '../ui/page.tsx'
import { Pager } from '../ui/pager.tsx'
import { Loaded } from '../ui/status.tsx'

/** This key's messages, searched by the API (it answers only the key's own). */
export function Messages() {
  const location = useLocation()
  const { apiKeyId: _key, errorCode: _code, ...search } = searchFromAddress(location.search)
  const [page, setPage] = useState(1)
  const messages = useQuery({
    queryKey: ['messages', 'own', search, page],
    queryFn: () =>
      api.GET('/api/third-party/messages', { params: { query: { ...paging(page), ...toQuery(search) } } }),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  })
  return (
    <Page title="Messages">
      <MessageSearchForm
        search={search}
        onSearch={(form) => {
          setPage(1)
          navigate(`/messages${toAddress(searchFromForm(form))}`, { replace: true })
        }}
      />
      <Loaded query={messages}>
        {(result) => (
          <>
            <p class="muted" role="status">
              {count(result.itemCount, 'message')}
            </p>
            <MessagesTable
              rows={result.data}
              searched={Object.keys(search).length > 0}
              none={
                <>
                  No message yet: send one from <Link href="/send">Send a test</Link>, or through the API.
                </>
              }
            />
            <Pager {...result} onPage={setPage} />
          </>
        )}
      </Loaded>
    </Page>
  )
}
