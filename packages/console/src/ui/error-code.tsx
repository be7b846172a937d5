import { ERROR_MEANINGS, errorMeaning, errorTitle } from '@dispatch/contracts'
import { useEffect } from 'preact/hooks'
import { Link } from '../router.tsx'
import { Page } from './page.tsx'

/** Where a code's explanation lives: its row on the error codes page (console and portal alike). */
export const errorCodeHref = (code: string) => `/error-codes#code-${encodeURIComponent(code)}`

/**
 * An error code as every message page shows it: the code, linked to its explanation when Dispatch
 * knows it, the platform's own words when given, and what the code means.
 */
export function ErrorCode({
  code,
  message,
  said,
}: {
  code: string
  message?: string | null
  /** Text shown beside it already (a timeline entry's line): its meaning is not repeated when it holds it. */
  said?: string
}) {
  const meaning = errorMeaning(code)
  return (
    <>
      {meaning ? (
        <Link href={errorCodeHref(code)} class="error-code" title={`What ${code} means`}>
          <code>{code}</code>
        </Link>
      ) : (
        <code>{code}</code>
      )}
      {message ? ` ${message}` : null}
      {meaning && meaning !== message && !said?.includes(meaning) ? (
        <span class="error-meaning">{meaning}</span>
      ) : null}
    </>
  )
}

/**
 * A code's meaning in a few words, as a table has room for (the overview's top errors, a campaign's
 * failures): a link to its row on the error codes page, which says the rest; the whole meaning on
 * hover. A code Dispatch does not know: a dash (the code beside it is the platform's, as it came).
 */
export function ErrorTitle({ code }: { code: string }) {
  const title = errorTitle(code)
  if (title === null) return <>—</>
  return (
    <Link href={errorCodeHref(code)} title={errorMeaning(code) ?? undefined}>
      {title}
    </Link>
  )
}

/** Every error code Dispatch knows, with what it means and what to do; each row its own anchor. */
export function ErrorCodes() {
  // Opened at a code (`#code-131026`): that row is brought into view, and stands out (:target).
  useEffect(() => {
    const target = window.location.hash ? document.getElementById(window.location.hash.slice(1)) : null
    target?.scrollIntoView({ block: 'center' })
  }, [])
  return (
    <Page title="Error codes">
      <p>
        The codes a message's last error or timeline may show: the platform's (Meta's Cloud API, numbers) and
        Dispatch's own (names). A code not listed here is the platform's, passed on as it came.
      </p>
      <table>
        <caption class="visually-hidden">Error codes and what they mean</caption>
        <thead>
          <tr>
            <th scope="col">Code</th>
            <th scope="col">What it means</th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(ERROR_MEANINGS).map(([code, meaning]) => (
            <tr
              key={code}
              id={`code-${code}`}
              class={window.location.hash === `#code-${code}` ? 'target' : undefined}
            >
              <th scope="row">
                <code>{code}</code>
              </th>
              <td>{meaning}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Page>
  )
}
