import { graphError, type ScriptedAnswer } from './graph-error.ts'

/**
 * What the fake Cloud API refuses in a `POST /{phone-number-id}/messages` body, as Meta refuses it
 * (`131009` "Parameter value is not valid", `100` for a missing object), for the limits Dispatch
 * checks at accept: so a test shows the fake would have caught what Dispatch let through.
 */
type Json = Record<string, unknown>

const MEDIA = new Set(['image', 'video', 'audio', 'document', 'sticker'])
const CAPTIONED = new Set(['image', 'video', 'document'])
const KNOWN = new Set(['text', 'template', ...MEDIA, 'location', 'contacts', 'interactive', 'reaction'])

const invalid = (details: string) => graphError(131009, 'Parameter value is not valid', 400, details)
const str = (value: unknown, max: number) =>
  typeof value === 'string' && value.length > 0 && value.length <= max

function mediaProblem(type: string, media: Json): string | undefined {
  if ((media.id === undefined) === (media.link === undefined))
    return `${type} needs exactly one of id and link`
  if (media.link !== undefined && !String(media.link).startsWith('https://'))
    return `${type}.link must be https`
  if (media.caption !== undefined && !CAPTIONED.has(type)) return `${type} takes no caption`
  if (media.caption !== undefined && !str(media.caption, 1024)) return `${type}.caption is too long`
  return undefined
}

function interactiveProblem(interactive: Json): string | undefined {
  const body = interactive.body as Json | undefined
  if (!body || !str(body.text, 1024)) return 'interactive.body.text is required, at most 1024 characters'
  const footer = interactive.footer as Json | undefined
  if (footer && !str(footer.text, 60)) return 'interactive.footer.text is at most 60 characters'
  const header = interactive.header as Json | undefined
  if (header?.type === 'text' && !str(header.text, 60))
    return 'interactive.header.text is at most 60 characters'
  const action = (interactive.action ?? {}) as Json
  switch (interactive.type) {
    case 'button': {
      const buttons = (action.buttons ?? []) as Json[]
      if (buttons.length < 1 || buttons.length > 3) return 'interactive.action.buttons takes 1 to 3 buttons'
      for (const button of buttons) {
        const reply = (button.reply ?? {}) as Json
        if (!str(reply.title, 20)) return 'a reply button title is at most 20 characters'
        if (!str(reply.id, 256)) return 'a reply button id is at most 256 characters'
      }
      return undefined
    }
    case 'list': {
      if (!str(action.button, 20)) return 'interactive.action.button is at most 20 characters'
      const rows = ((action.sections ?? []) as Json[]).flatMap((s) => (s.rows ?? []) as Json[])
      if (rows.length < 1 || rows.length > 10) return 'a list takes 1 to 10 rows in all'
      for (const row of rows) if (!str(row.title, 24)) return 'a list row title is at most 24 characters'
      return undefined
    }
    case 'cta_url': {
      const parameters = (action.parameters ?? {}) as Json
      if (!str(parameters.display_text, 20)) return 'cta_url display_text is at most 20 characters'
      if (!String(parameters.url ?? '').startsWith('https://')) return 'cta_url url must be https'
      return undefined
    }
    case 'location_request_message':
      return action.name === 'send_location'
        ? undefined
        : 'location_request_message action.name must be send_location'
    default:
      return `interactive.type ${JSON.stringify(interactive.type)} is not supported`
  }
}

/** Meta's answer to a message body it would refuse, or undefined when it would take it. */
export function messageRefusal(body: Json): ScriptedAnswer | undefined {
  const type = String(body.type ?? 'text')
  if (!KNOWN.has(type)) return invalid(`Unsupported message type ${type}`)
  const object = body[type]
  if (object === undefined || object === null)
    return graphError(100, 'Invalid parameter', 400, `${type} is required`)
  let problem: string | undefined
  if (MEDIA.has(type)) problem = mediaProblem(type, object as Json)
  else if (type === 'interactive') problem = interactiveProblem(object as Json)
  else if (type === 'location') {
    const { latitude, longitude } = object as Json
    if (typeof latitude !== 'number' || Math.abs(latitude) > 90) problem = 'location.latitude is invalid'
    else if (typeof longitude !== 'number' || Math.abs(longitude) > 180)
      problem = 'location.longitude is invalid'
  } else if (type === 'contacts') {
    const cards = object as Json[]
    if (!Array.isArray(cards) || cards.length === 0) problem = 'contacts needs at least one contact'
    else if (cards.some((c) => !str((c.name as Json | undefined)?.formatted_name, 1000))) {
      problem = 'contacts[].name.formatted_name is required'
    }
  } else if (type === 'reaction') {
    const { message_id: messageId, emoji } = object as Json
    if (!str(messageId, 256) || !String(messageId).startsWith('wamid.'))
      problem = 'reaction.message_id must be a wamid'
    else if (typeof emoji !== 'string') problem = 'reaction.emoji is required'
  } else if (type === 'text' && !str((object as Json).body, 4096))
    problem = 'text.body is at most 4096 characters'
  if (!problem) {
    const context = body.context as Json | undefined
    if (context && !String(context.message_id ?? '').startsWith('wamid.'))
      problem = 'context.message_id must be a wamid'
  }
  return problem ? invalid(problem) : undefined
}
