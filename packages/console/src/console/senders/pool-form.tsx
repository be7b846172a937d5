import { portfolioOf, type SenderView } from '@dispatch/contracts'
import { useState } from 'preact/hooks'

/** One member as the form holds it: a sender and its weight, in the list's order. */
export type MemberDraft = { senderId: string; weight: number }

const move = <T,>(list: T[], from: number, to: number) => {
  const next = [...list]
  const [item] = next.splice(from, 1)
  if (item !== undefined) next.splice(to, 0, item)
  return next
}

/**
 * A pool's name and its members, in order, with weights: for a new pool and for changing one. Only
 * senders of the first member's business portfolio are offered once there is one; a member whose
 * portfolio differs anyway (changed since) is the API's to refuse, and its words are shown.
 */
export function PoolForm(props: {
  label: string
  senders: SenderView[]
  initial?: { name: string; members: MemberDraft[] }
  submitLabel: string
  pending: boolean
  onSubmit: (pool: { name: string; members: MemberDraft[] }) => void
  onCancel?: () => void
}) {
  const { senders } = props
  const [name, setName] = useState(props.initial?.name ?? '')
  // Weights as typed (a field may be empty for a moment); numbers when the form is sent.
  const [members, setMembers] = useState(
    (props.initial?.members ?? []).map((m) => ({ senderId: m.senderId, weight: String(m.weight) })),
  )
  const [adding, setAdding] = useState('')
  const byId = new Map(senders.map((s) => [s.id, s]))
  const nameOf = (id: string) => byId.get(id)?.displayName ?? id
  const first = members[0] && byId.get(members[0].senderId)
  const portfolio = first ? portfolioOf(first) : undefined
  const offered = senders.filter(
    (s) => !members.some((m) => m.senderId === s.id) && (!portfolio || portfolioOf(s) === portfolio),
  )
  const add = () => {
    const id = adding || offered[0]?.id
    if (!id) return
    setMembers([...members, { senderId: id, weight: '1' }])
    setAdding('')
  }
  return (
    <form
      class="stack"
      aria-label={props.label}
      onSubmit={(event) => {
        event.preventDefault()
        props.onSubmit({
          name: name.trim(),
          members: members.map((m) => ({ senderId: m.senderId, weight: Number.parseInt(m.weight, 10) })),
        })
      }}
    >
      <label>
        Pool name
        <input
          name="name"
          required
          maxLength={200}
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </label>
      <fieldset>
        <legend>Members, in order (the first is where a bound key lands when it names no sender)</legend>
        {members.length === 0 ? <p class="muted">No member yet: add the pool's senders below.</p> : null}
        <ol class="stack">
          {members.map((member, index) => {
            const who = nameOf(member.senderId)
            return (
              <li key={member.senderId} class="row tight">
                <span>
                  {who} <span class="muted">{byId.get(member.senderId)?.displayPhoneNumber ?? ''}</span>
                </span>
                <label>
                  Weight of {who}
                  <input
                    type="number"
                    min="1"
                    max="1000"
                    required
                    value={member.weight}
                    onInput={(e) => {
                      const weight = e.currentTarget.value
                      setMembers(members.map((m, i) => (i === index ? { ...m, weight } : m)))
                    }}
                  />
                </label>
                <button
                  type="button"
                  class="button secondary"
                  aria-label={`Move ${who} up`}
                  disabled={index === 0}
                  onClick={() => setMembers(move(members, index, index - 1))}
                >
                  ↑
                </button>
                <button
                  type="button"
                  class="button secondary"
                  aria-label={`Move ${who} down`}
                  disabled={index === members.length - 1}
                  onClick={() => setMembers(move(members, index, index + 1))}
                >
                  ↓
                </button>
                <button
                  type="button"
                  class="button secondary"
                  aria-label={`Remove ${who}`}
                  onClick={() => setMembers(members.filter((_, i) => i !== index))}
                >
                  Remove
                </button>
              </li>
            )
          })}
        </ol>
        {offered.length > 0 ? (
          <div class="row tight">
            <label>
              Add a sender
              <select value={adding || offered[0]?.id} onChange={(e) => setAdding(e.currentTarget.value)}>
                {offered.map((s) => (
                  <option key={s.id} value={s.id}>
                    {s.displayName} ({portfolioOf(s)})
                  </option>
                ))}
              </select>
            </label>
            <button type="button" class="button secondary" onClick={add}>
              Add member
            </button>
          </div>
        ) : (
          <p class="muted">
            {portfolio
              ? `Every other sender of portfolio ${portfolio} is already a member.`
              : 'There is no sender to add.'}
          </p>
        )}
        {portfolio ? (
          <p class="muted">
            Only senders of business portfolio <code>{portfolio}</code> are offered: a pool's senders are all
            of one business.
          </p>
        ) : null}
      </fieldset>
      <div class="row tight">
        <button type="submit" disabled={props.pending || members.length === 0}>
          {props.submitLabel}
        </button>
        {props.onCancel ? (
          <button type="button" class="button secondary" onClick={props.onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  )
}
