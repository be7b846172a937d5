import type { ComponentChildren } from 'preact'
import { useEffect, useRef } from 'preact/hooks'

/**
 * A page: its title as the one h1, which takes the focus when the page opens, so a keyboard or
 * screen-reader user starts at the new page, not at the link they left.
 */
export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null)
  useEffect(() => {
    document.title = `${props.title} · Dispatch`
    if (document.activeElement === document.body || document.activeElement?.closest('nav, form.signin')) {
      heading.current?.focus()
    }
  }, [props.title])
  return (
    <>
      <div class="page-head">
        <h1 tabIndex={-1} ref={heading}>
          {props.title}
        </h1>
        {props.actions}
      </div>
      {props.children}
    </>
  )
}

/** A titled region of a page. */
export function Section(props: { title: string; children: ComponentChildren }) {
  const id = `section-${props.title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>{props.title}</h2>
      {props.children}
    </section>
  )
}
