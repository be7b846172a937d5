import type { ComponentChildren } from 'preact'
import { useState } from 'preact/hooks'
import { describeError } from '../api.ts'

/**
 * A sign-in page: its fields, submitted as FormData to `signIn`, which exchanges them for a
 * session. The form is reset after each try, so a credential does not linger in the page.
 */
export function SignIn(props: {
  title: string
  notice?: string | undefined
  signIn: (form: FormData) => Promise<void>
  children: ComponentChildren
}) {
  const [error, setError] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  const onSubmit = async (event: SubmitEvent) => {
    event.preventDefault()
    const form = event.currentTarget as HTMLFormElement
    setBusy(true)
    setError(undefined)
    try {
      await props.signIn(new FormData(form))
    } catch (failure) {
      setError(describeError(failure))
    } finally {
      form.reset()
      setBusy(false)
    }
  }
  return (
    <main id="main" class="signin-page">
      <h1>{props.title}</h1>
      {props.notice ? (
        <p class="notice" role="status">
          {props.notice}
        </p>
      ) : null}
      <form class="signin stack" onSubmit={onSubmit}>
        {props.children}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
      </form>
    </main>
  )
}
