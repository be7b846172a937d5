import { useMutation } from '@tanstack/preact-query'
import { api } from '../../api.ts'
import { text } from '../../ui/format.ts'
import { Page } from '../../ui/page.tsx'
import { Outcome } from '../../ui/status.tsx'

/**
 * Ends every console session of an admin, on every instance (a lost laptop, a token about to be
 * rotated); audited under the signed-in admin's name. The admin's token itself still works.
 */
export function Sessions() {
  const revoke = useMutation({
    mutationFn: (admin: string) => api.POST('/api/admin/sessions/revoke', { body: { admin } }),
  })
  const ended = revoke.data
  return (
    <Page title="Sessions">
      <p>
        Ending an admin’s sessions signs that admin out of the console in every browser at once. The admin’s
        token keeps working until it is removed from <code>ADMIN_TOKENS</code>.
      </p>
      <form
        class="row tight"
        aria-label="End an admin’s sessions"
        onSubmit={(event) => {
          event.preventDefault()
          const admin = text(new FormData(event.currentTarget), 'admin')
          if (admin) revoke.mutate(admin)
        }}
      >
        <label>
          Admin name
          <input name="admin" required pattern="[A-Za-z0-9_.\-]+" autocomplete="off" />
        </label>
        <button type="submit" class="danger" disabled={revoke.isPending}>
          End all sessions
        </button>
        <Outcome
          mutation={revoke}
          done={
            ended
              ? `Ended ${ended.ended} session${ended.ended === 1 ? '' : 's'} of ${ended.admin}.`
              : undefined
          }
        />
      </form>
    </Page>
  )
}
