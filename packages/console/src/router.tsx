import type { ComponentChildren, JSX } from 'preact'
import { useEffect, useState } from 'preact/hooks'

/** The app's two homes: `/portal` for a key holder, `/console` for admins. */
export const mode: 'console' | 'portal' = window.location.pathname.startsWith('/portal')
  ? 'portal'
  : 'console'
export const basePath = mode === 'portal' ? '/portal' : '/console'

const listeners = new Set<() => void>()
const notify = () => {
  for (const listener of listeners) listener()
}
window.addEventListener('popstate', notify)

/** The path under the base, e.g. `/messages/…`, and the query string. */
const current = () => {
  const path = window.location.pathname.slice(basePath.length) || '/'
  return { path: path.replace(/\/+$/, '') || '/', search: window.location.search }
}

/** Goes to a path under the base (history API; the API answers index.html for any such path). */
export function navigate(to: string, { replace = false } = {}) {
  const url = `${basePath}${to === '/' ? '' : to}`
  if (replace) window.history.replaceState(null, '', url)
  else window.history.pushState(null, '', url)
  notify()
}

export function useLocation() {
  const [location, setLocation] = useState(current)
  useEffect(() => {
    const update = () => setLocation(current())
    listeners.add(update)
    return () => {
      listeners.delete(update)
    }
  }, [])
  return location
}

/** `/messages/:id` against `/messages/abc` → `{id: 'abc'}`, or undefined. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/')
  const got = path.split('/')
  if (want.length !== got.length) return undefined
  const params: Record<string, string> = {}
  for (const [index, part] of want.entries()) {
    const value = got[index] ?? ''
    if (part.startsWith(':')) params[part.slice(1)] = decodeURIComponent(value)
    else if (part !== value) return undefined
  }
  return params
}

type LinkProps = Omit<JSX.HTMLAttributes<HTMLAnchorElement>, 'href'> & {
  href: string
  children: ComponentChildren
}

/** A link under the base that navigates in the page (a modified click opens a tab as usual). */
export function Link({ href, children, ...rest }: LinkProps) {
  const onClick = (event: MouseEvent) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey)
      return
    event.preventDefault()
    navigate(href)
  }
  return (
    <a {...rest} href={`${basePath}${href === '/' ? '' : href}`} onClick={onClick}>
      {children}
    </a>
  )
}
