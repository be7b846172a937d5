import { useState } from 'preact/hooks'

/**
 * An id as people need it: whole (two UUIDv7 taken in one second share their first eight
 * characters, so a prefix cannot tell them apart), in monospace; with `copy` (what it is: "key id"),
 * a button beside it that copies it, named "Copy key id <id>". Inside a link, leave `copy` out and
 * put the button beside the link (a button cannot sit inside a link).
 */
export function Id({ value, copy }: { value: string; copy?: string }) {
  return copy ? (
    <>
      <code class="id">{value}</code> <CopyButton value={value} label={`${copy} ${value}`} />
    </>
  ) : (
    <code class="id">{value}</code>
  )
}

/** Copies `value` to the clipboard; says so for a moment. `label` names what it copies ("key id …"). */
export function CopyButton({ value, label }: { value: string; label: string }) {
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    await navigator.clipboard.writeText(value)
    setCopied(true)
    setTimeout(() => setCopied(false), 1500)
  }
  return (
    // Its name starts with what it shows ("Copy", then "Copied"), as a spoken command would say it.
    <button type="button" class="copy" aria-label={`${copied ? 'Copied' : 'Copy'} ${label}`} onClick={copy}>
      {copied ? 'Copied' : 'Copy'}
    </button>
  )
}
