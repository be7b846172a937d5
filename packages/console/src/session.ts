import { useEffect, useState } from 'preact/hooks'
import { isSessionEnded, onSignedOut, queryClient, setCsrfToken } from './api.ts'

type SessionState<S> =
  | { status: 'loading' }
  | { status: 'signed-out'; notice?: string }
  | { status: 'signed-in'; session: S }

/**
 * The browser's session, read back once at load (the cookie is HttpOnly: only the API can say
 * whether there is one); its CSRF token goes to the client, in memory only.
 */
export function useSession<S extends { csrfToken: string }>(load: () => Promise<S>) {
  const [state, setState] = useState<SessionState<S>>({ status: 'loading' })
  const signedIn = (session: S) => {
    setCsrfToken(session.csrfToken)
    setState({ status: 'signed-in', session })
  }
  const signedOut = (notice?: string) => {
    setCsrfToken(undefined)
    queryClient.clear()
    setState(notice ? { status: 'signed-out', notice } : { status: 'signed-out' })
  }
  useEffect(() => {
    load().then(signedIn, (error: unknown) =>
      signedOut(isSessionEnded(error) ? undefined : 'The API could not be reached; try again.'),
    )
    return onSignedOut(() => signedOut('Your session has ended: sign in again.'))
  }, [])
  return { state, signedIn, signedOut }
}
