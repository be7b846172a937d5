import { api } from '../api.ts'
import { CampaignPage } from '../portal/campaigns/campaign.tsx'
import { adminCampaigns } from '../portal/campaigns/campaign-source.ts'
import { match, useLocation } from '../router.tsx'
import { useSession } from '../session.ts'
import { ErrorCodes } from '../ui/error-code.tsx'
import { Shell } from '../ui/shell.tsx'
import { SignIn } from '../ui/sign-in.tsx'
import { Campaigns } from './campaigns/campaigns.tsx'
import { KeyDetail } from './keys/key-detail.tsx'
import { KeyRequests } from './keys/key-requests.tsx'
import { Keys } from './keys/keys.tsx'
import { MessageDetail } from './messages/message-detail.tsx'
import { Messages } from './messages/messages.tsx'
import { Overview } from './overview/overview.tsx'
import { Queues } from './queues/queues.tsx'
import { SenderDetail } from './senders/sender-detail.tsx'
import { SenderPools } from './senders/sender-pools.tsx'
import { Senders } from './senders/senders.tsx'
import { Sessions } from './sessions/sessions.tsx'

const NAV = [
  { href: '/', label: 'Overview' },
  { href: '/key-requests', label: 'Key requests' },
  { href: '/keys', label: 'Keys' },
  { href: '/senders', label: 'Senders' },
  { href: '/sender-pools', label: 'Sender pools' },
  { href: '/messages', label: 'Messages' },
  { href: '/campaigns', label: 'Campaigns' },
  { href: '/queues', label: 'Queues' },
  { href: '/sessions', label: 'Sessions' },
]

function Route() {
  const { path } = useLocation()
  if (path === '/') return <Overview />
  if (path === '/key-requests') return <KeyRequests />
  if (path === '/keys') return <Keys />
  if (path === '/senders') return <Senders />
  if (path === '/sender-pools') return <SenderPools />
  if (path === '/messages') return <Messages />
  if (path === '/campaigns') return <Campaigns />
  if (path === '/queues') return <Queues />
  if (path === '/sessions') return <Sessions />
  if (path === '/error-codes') return <ErrorCodes />
  let params = match('/keys/:id', path)
  if (params?.id) return <KeyDetail id={params.id} />
  params = match('/senders/:id', path)
  if (params?.id) return <SenderDetail id={params.id} />
  params = match('/campaigns/:id', path)
  if (params?.id) return <CampaignPage id={params.id} source={adminCampaigns} />
  params = match('/messages/:id', path)
  if (params?.id) return <MessageDetail id={params.id} />
  return (
    <>
      <h1>Not found</h1>
      <p>No console page lives at this address.</p>
    </>
  )
}

/** The admins' console, at /console. */
export function ConsoleApp() {
  const { state, signedIn, signedOut } = useSession(() => api.GET('/api/admin/session'))
  if (state.status === 'loading') return <p class="muted">Loading…</p>
  if (state.status === 'signed-out') {
    return (
      <SignIn
        title="Dispatch console"
        notice={state.notice}
        signIn={async (form) =>
          signedIn(
            await api.POST('/api/admin/session', {
              body: { name: String(form.get('name') ?? ''), token: String(form.get('token') ?? '') },
            }),
          )
        }
      >
        <label>
          Admin name
          <input name="name" autocomplete="username" required />
        </label>
        <label>
          Admin token
          <input name="token" type="password" autocomplete="current-password" required />
        </label>
      </SignIn>
    )
  }
  const signOut = async () => {
    await api.DELETE('/api/admin/session').catch(() => undefined)
    signedOut('You have signed out.')
  }
  return (
    <Shell
      product="Dispatch console"
      nav={NAV}
      who={state.session.actor}
      service={state.session.service}
      onSignOut={signOut}
    >
      <Route />
    </Shell>
  )
}
