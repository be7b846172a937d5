const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })

export const formatTime = (iso: string | null | undefined) => (iso ? dateTime.format(new Date(iso)) : '—')

/** A form's text field: its trimmed value, or undefined when empty (the API's "not given"). */
export const text = (form: FormData, name: string) => {
  const value = form.get(name)
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined
}

export const integer = (form: FormData, name: string) => {
  const value = text(form, name)
  return value === undefined ? undefined : Number.parseInt(value, 10)
}

/** A datetime-local field as an ISO instant. */
export const instant = (form: FormData, name: string) => {
  const value = text(form, name)
  return value === undefined ? undefined : new Date(value).toISOString()
}

/** `1 message`, `2 messages`. */
export const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`
