import type {
  ButtonVariable,
  HeaderVariable,
  InteractiveObject,
  OutboundMessage,
  SendTemplateBody,
} from '@dispatch/contracts'

/**
 * Who it goes to: `to`, the number's digits without the plus, or `recipient`, a BSUID for a user
 * known only by username (the Cloud API's field for one; `to` would win if both were given).
 */
const addressOf = (body: { phone?: string | undefined; userId?: string | undefined }) =>
  body.phone !== undefined ? { to: body.phone.replace(/^\+/, '') } : { recipient: body.userId as string }

/** A file by the platform's media id, or by link. */
const mediaObject = (media: { mediaId?: string | undefined; link?: string | undefined }) =>
  media.mediaId !== undefined ? { id: media.mediaId } : { link: media.link as string }

/** Our `interactive` is the Cloud API's, but a media header names its file as our sends do (`mediaId`). */
function interactiveObject(interactive: InteractiveObject) {
  if (!('header' in interactive) || !interactive.header || interactive.header.type === 'text')
    return interactive
  const header = interactive.header
  const media = header[header.type] as { mediaId?: string; link?: string }
  return { ...interactive, header: { type: header.type, [header.type]: mediaObject(media) } }
}

const MEDIA_TYPES = new Set(['image', 'video', 'document'])

/** One header parameter per header variable: media by id (`originalMediaId`), or text by `value`. */
function headerParameter(variable: HeaderVariable) {
  const type = variable.type.toLowerCase()
  if (MEDIA_TYPES.has(type)) return { type, [type]: { id: variable.originalMediaId } }
  return { type: 'text', text: variable.value ?? '' }
}

/**
 * Body parameters from `variables`. Numeric names ("1", "2", …) are the template's positional
 * placeholders `{{1}}`, `{{2}}`, sent in numeric order; any other name is a named placeholder
 * `{{name}}`, sent with `parameter_name`, in the order given.
 */
export function bodyParameters(variables: Record<string, string>) {
  const names = Object.keys(variables)
  if (names.length > 0 && names.every((name) => /^[0-9]+$/.test(name))) {
    return names
      .sort((a, b) => Number(a) - Number(b))
      .map((name) => ({ type: 'text', text: variables[name] as string }))
  }
  return names.map((name) => ({ type: 'text', parameter_name: name, text: variables[name] as string }))
}

/** One `button` component per button variable; a quick reply carries a payload, others text. */
function buttonComponent(button: ButtonVariable) {
  const subType = button.type.toLowerCase()
  return {
    type: 'button',
    sub_type: subType,
    index: String(button.buttonIndex),
    parameters: [
      subType === 'quick_reply'
        ? { type: 'payload', payload: button.text }
        : { type: 'text', text: button.text },
    ],
  }
}

function templateObject(body: SendTemplateBody) {
  const components: object[] = []
  if (body.headerVariables?.length) {
    components.push({ type: 'header', parameters: body.headerVariables.map(headerParameter) })
  }
  if (body.variables && Object.keys(body.variables).length > 0) {
    components.push({ type: 'body', parameters: bodyParameters(body.variables) })
  }
  for (const button of [...(body.buttonVariables ?? [])].sort((a, b) => a.buttonIndex - b.buttonIndex)) {
    components.push(buttonComponent(button))
  }
  return {
    name: body.templateId,
    language: { code: body.language },
    ...(components.length ? { components } : {}),
  }
}

/** The message's own object under its type's key, as the Cloud API takes it. */
function typeObject(message: OutboundMessage): object {
  switch (message.type) {
    case 'text':
      return { preview_url: false, body: message.body.text }
    case 'template':
      return templateObject(message.body)
    case 'image': {
      const { text, ...media } = message.body.image
      return { ...mediaObject(media), ...(text ? { caption: text } : {}) }
    }
    case 'document': {
      const { mediaId, link, ...rest } = message.body.document
      return { ...mediaObject({ mediaId, link }), ...rest }
    }
    case 'video': {
      const { mediaId, link, ...rest } = message.body.video
      return { ...mediaObject({ mediaId, link }), ...rest }
    }
    case 'audio':
      return mediaObject(message.body.audio)
    case 'sticker':
      return mediaObject(message.body.sticker)
    case 'location':
      return message.body.location
    case 'contacts':
      return message.body.contacts
    case 'interactive':
      return interactiveObject(message.body.interactive)
    case 'reaction':
      return { message_id: message.body.reaction.messageId, emoji: message.body.reaction.emoji }
  }
}

/**
 * The JSON body of `POST /{phone-number-id}/messages` for one message. Our message id rides in
 * `biz_opaque_callback_data`, which the platform echoes in its status webhooks; `replyTo` becomes
 * the quoted message's `context` (by then a wamid: see references.ts).
 */
export function cloudApiPayload(messageId: string, message: OutboundMessage) {
  const { replyTo } = message.body
  return {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    ...addressOf(message.body),
    biz_opaque_callback_data: messageId,
    ...(replyTo === undefined ? {} : { context: { message_id: replyTo } }),
    type: message.type,
    [message.type]: typeObject(message),
  }
}
