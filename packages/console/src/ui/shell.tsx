import type { ComponentChildren } from 'preact'
import { Link, useLocation } from '../router.tsx'

export interface NavItem {
  href: string
  label: string
}

/** Where the service runs, as the session tells it. */
export interface ServiceFacts {
  environment: string
  platform: string
}

/**
 * What a person must not miss about the service they are looking at: that it is not production,
 * or that its messages reach no one (the sandbox platform). Nothing in production on WhatsApp.
 */
export function serviceNotice(service: ServiceFacts | undefined): string | null {
  if (!service) return null
  const notes: string[] = []
  if (service.environment !== 'production') notes.push(`This is a ${service.environment} service.`)
  if (service.platform === 'sandbox')
    notes.push(
      'Messages go to the sandbox platform: they are recorded as sent, and reach no one on WhatsApp.',
    )
  return notes.length > 0 ? notes.join(' ') : null
}

/** The frame of every signed-in page: a banner with who is signed in, the navigation, the main region. */
export function Shell(props: {
  product: string
  nav: NavItem[]
  who: string
  service?: ServiceFacts
  onSignOut: () => void
  children: ComponentChildren
}) {
  const notice = serviceNotice(props.service)
  const { path } = useLocation()
  const isCurrent = (href: string) =>
    href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`)
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="banner">
        <span class="product">{props.product}</span>
        <nav aria-label="Main">
          <ul>
            {props.nav.map((item) => (
              <li key={item.href}>
                <Link href={item.href} aria-current={isCurrent(item.href) ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who">
          Signed in as <strong>{props.who}</strong>
        </span>
        <button type="button" class="secondary" onClick={props.onSignOut}>
          Sign out
        </button>
      </header>
      {notice ? (
        <p class="service-notice" role="note" aria-label="About this service">
          {notice}
        </p>
      ) : null}
      <main id="main">{props.children}</main>
    </>
  )
}
