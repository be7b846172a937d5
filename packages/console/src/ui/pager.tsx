/** Previous / next over the API's paging envelope. */
export function Pager(props: {
  page: number
  pageCount: number
  hasPreviousPage: boolean
  hasNextPage: boolean
  onPage: (page: number) => void
}) {
  if (props.pageCount <= 1 && !props.hasNextPage) return null
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={!props.hasPreviousPage} onClick={() => props.onPage(props.page - 1)}>
        Previous page
      </button>
      <span>
        Page {props.page} of {props.pageCount}
      </span>
      <button type="button" disabled={!props.hasNextPage} onClick={() => props.onPage(props.page + 1)}>
        Next page
      </button>
    </nav>
  )
}
