import { createDispatchClient, DispatchError } from '@dispatch/client'
import { MutationCache, QueryCache, QueryClient } from '@tanstack/preact-query'

/** The session's CSRF token: in memory only, from the sign-in answer or GET …/session after a reload. */
let csrfToken: string | undefined
export const setCsrfToken = (token: string | undefined) => {
  csrfToken = token
}
/** The header a change made outside the typed client carries (an upload the client has no method for). */
export const csrfHeader = (): Record<string, string> => (csrfToken ? { 'x-csrf-token': csrfToken } : {})

/** The typed client, with the browser's session cookie instead of a header credential. */
export const api = createDispatchClient({
  baseUrl: window.location.origin,
  retries: 1,
  session: { csrfToken: () => csrfToken },
})

const signedOutListeners = new Set<() => void>()
/** Called when an answer says the session has ended (expired, or signed out in another tab). */
export const onSignedOut = (listener: () => void) => {
  signedOutListeners.add(listener)
  return () => signedOutListeners.delete(listener)
}
export const isSessionEnded = (error: unknown) => error instanceof DispatchError && error.statusCode === 401

const whenSessionEnded = (error: unknown) => {
  if (isSessionEnded(error)) for (const listener of signedOutListeners) listener()
}

export const queryClient = new QueryClient({
  // A read or a change answered 401: the session ended under the page; back to sign-in.
  queryCache: new QueryCache({ onError: whenSessionEnded }),
  mutationCache: new MutationCache({ onError: whenSessionEnded }),
  defaultOptions: {
    queries: {
      // A 4xx will answer the same again; only the API being briefly away is worth another try.
      retry: (count, error) => !(error instanceof DispatchError && error.statusCode < 500) && count < 2,
      refetchOnWindowFocus: false,
    },
  },
})

/**
 * A key without the scope a page needs: what it cannot do, and what to ask for. A key's scopes are
 * fixed at its approval, so the way to more is a new key that names them, approved by an admin.
 */
const missingScope = (error: DispatchError) => {
  const scope = /"([^"]+)" scope/.exec(error.message)?.[1]
  const named = scope ? `the "${scope}" scope` : 'the scope this needs'
  return (
    `This key was approved without ${named}, so it cannot do this. A key's scopes are set when an ` +
    `admin approves it: request a key that includes ${scope ?? 'it'} (POST /api/api-keys/request) and ask ` +
    'your Dispatch admin to approve it.'
  )
}

/** One line a person reads, for any failure. */
export const describeError = (error: unknown) =>
  error instanceof DispatchError
    ? error.errorCode === 'INSUFFICIENT_SCOPE'
      ? missingScope(error)
      : `${error.message} (${error.errorCode})`
    : error instanceof Error
      ? error.message
      : String(error)

/** The paging parameters every list takes. */
export const paging = (page = 1, take = 25) => ({
  page,
  take,
  order: 'DESC' as const,
  orderField: 'createdAt' as const,
})
