import { useState } from 'preact/hooks'

/**
 * An id as people need it: whole (two UUIDv7 taken in one second share their first eight
 * characters, so a prefix cannot tell them apart), in monospace, with a button that copies it.
 */
export function Id({ value }: { value: string }) {
  return <code class="id">{value}</code>
}

/** Copies `value` to the clipboard; says so for a moment. `label` names what it copies. */
export function CopyButton({ value, label }: { value: string; label: string }) {
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    await navigator.clipboard.writeText(value)
    setCopied(true)
    setTimeout(() => setCopied(false), 1500)
  }
  return (
    <button type="button" class="copy" aria-label={`Copy ${label}`} onClick={copy}>
      {copied ? 'Copied' : 'Copy'}
    </button>
  )
}
