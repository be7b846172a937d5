import { api } from '../api.ts'
import { match, useLocation } from '../router.tsx'
import { useSession } from '../session.ts'
import { ErrorCodes } from '../ui/error-code.tsx'
import { Shell } from '../ui/shell.tsx'
import { SignIn } from '../ui/sign-in.tsx'
import { CampaignPage } from './campaigns/campaign.tsx'
import { CampaignNew } from './campaigns/campaign-new.tsx'
import { keyCampaigns } from './campaigns/campaign-source.ts'
import { Campaigns } from './campaigns/campaigns.tsx'
import { MessageDetail } from './message-detail.tsx'
import { Messages } from './messages.tsx'
import { SendTest } from './send-test/send-test.tsx'
import { Usage } from './usage.tsx'
import { WebhookEndpoint } from './webhook-endpoint.tsx'
import { WebhookEndpoints } from './webhook-endpoints.tsx'
import { WebhookEventTypes } from './webhook-event-types.tsx'

const NAV = [
  { href: '/', label: 'Messages' },
  { href: '/campaigns', label: 'Campaigns' },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/usage', label: 'Limits and usage' },
  { href: '/send', label: 'Send a test' },
]

function Route({ scopes }: { scopes: readonly string[] }) {
  const { path } = useLocation()
  if (path === '/' || path === '/messages') return <Messages />
  if (path === '/campaigns') return <Campaigns />
  if (path === '/campaigns/new') return <CampaignNew />
  if (path === '/webhooks') return <WebhookEndpoints />
  if (path === '/webhooks/event-types') return <WebhookEventTypes />
  if (path === '/usage') return <Usage />
  if (path === '/send') return <SendTest scopes={scopes} />
  if (path === '/error-codes') return <ErrorCodes />
  let params = match('/messages/:id', path)
  if (params?.id) return <MessageDetail id={params.id} />
  params = match('/campaigns/:id', path)
  if (params?.id) return <CampaignPage id={params.id} source={keyCampaigns} />
  params = match('/webhooks/:id', path)
  if (params?.id) return <WebhookEndpoint id={params.id} />
  return (
    <>
      <h1>Not found</h1>
      <p>No portal page lives at this address.</p>
    </>
  )
}

/**
 * A key holder's portal, at /portal. The key is exchanged for a session cookie at sign-in and
 * then forgotten: it is never written to storage, and the form is cleared.
 */
export function PortalApp() {
  const { state, signedIn, signedOut } = useSession(() => api.GET('/api/third-party/session'))
  if (state.status === 'loading') return <p class="muted">Loading…</p>
  if (state.status === 'signed-out') {
    return (
      <SignIn
        title="Dispatch portal"
        notice={state.notice}
        signIn={async (form) =>
          signedIn(
            await api.POST('/api/third-party/session', {
              body: { apiKey: String(form.get('apiKey') ?? '') },
            }),
          )
        }
      >
        <label>
          API key
          <input name="apiKey" type="password" autocomplete="off" required />
        </label>
      </SignIn>
    )
  }
  const signOut = async () => {
    await api.DELETE('/api/third-party/session').catch(() => undefined)
    signedOut('You have signed out.')
  }
  return (
    <Shell
      product="Dispatch portal"
      nav={NAV}
      who={state.session.clientName}
      service={state.session.service}
      onSignOut={signOut}
    >
      <Route scopes={state.session.scopes} />
    </Shell>
  )
}
