import type { UseQueryResult } from '@tanstack/preact-query'
import type { ComponentChildren } from 'preact'
import { describeError } from '../api.ts'

/** What a query shows until it has its data: loading, or its error. */
export function Loaded<T>(props: { query: UseQueryResult<T>; children: (data: T) => ComponentChildren }) {
  const { query } = props
  if (query.isPending) return <p class="muted">Loading…</p>
  if (query.isError) return <ErrorNote error={query.error} />
  return <>{props.children(query.data)}</>
}

export function ErrorNote({ error }: { error: unknown }) {
  return (
    <p class="error" role="alert">
      {describeError(error)}
    </p>
  )
}

/** A change's outcome, announced to screen readers. */
export function Outcome(props: {
  mutation: { isError: boolean; isSuccess: boolean; error: unknown }
  done?: string
}) {
  const { mutation } = props
  if (mutation.isError) return <ErrorNote error={mutation.error} />
  return (
    <p class="done" role="status">
      {mutation.isSuccess && props.done ? props.done : ''}
    </p>
  )
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status}`}>{status.replace(/_/g, ' ')}</span>
}
