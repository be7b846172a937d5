import type { ComponentChildren } from 'preact'
import { Link, useLocation } from '../router.tsx'

export interface NavItem {
  href: string
  label: string
}

/** The frame of every signed-in page: a banner with who is signed in, the navigation, the main region. */
export function Shell(props: {
  product: string
  nav: NavItem[]
  who: string
  onSignOut: () => void
  children: ComponentChildren
}) {
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
      <main id="main">{props.children}</main>
    </>
  )
}
