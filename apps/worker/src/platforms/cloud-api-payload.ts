import type { ButtonVariable, HeaderVariable, OutboundMessage, SendTemplateBody } from '@dispatch/contracts'

/** The Cloud API wants the number's digits, without the plus. */
const toRecipient = (phone: string) => phone.replace(/^\+/, '')

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

/**
 * The JSON body of `POST /{phone-number-id}/messages` for one message. Our message id rides in
 * `biz_opaque_callback_data`, which the platform echoes in its status webhooks.
 */
export function cloudApiPayload(messageId: string, message: OutboundMessage) {
  const envelope = {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: toRecipient(message.body.phone),
    biz_opaque_callback_data: messageId,
  }
  switch (message.type) {
    case 'text':
      return { ...envelope, type: 'text', text: { preview_url: false, body: message.body.text } }
    case 'image': {
      const { mediaId, text } = message.body.image
      return { ...envelope, type: 'image', image: { id: mediaId, ...(text ? { caption: text } : {}) } }
    }
    case 'template':
      return { ...envelope, type: 'template', template: templateObject(message.body) }
  }
}
