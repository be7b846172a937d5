import type { MessageType } from '@dispatch/contracts'

/** The words every content field of `CONTENT_BODIES` holds, to search for after redaction. */
export const SECRET = 'secret-words'
const media = { mediaId: SECRET, link: `https://example.test/${SECRET}.pdf` }

/** A send body of each kind whose every content field holds SECRET. */
export const CONTENT_BODIES: Record<MessageType, object> = {
  text: { text: SECRET },
  template: {
    templateId: 'order_shipped',
    language: 'pt_BR',
    variables: { '1': SECRET },
    headerVariables: [{ type: 'image', value: SECRET, originalMediaId: SECRET }],
    buttonVariables: [{ buttonIndex: 0, text: SECRET, type: 'URL' }],
  },
  image: { image: { ...media, text: SECRET } },
  document: { document: { ...media, caption: SECRET, filename: `${SECRET}.pdf` } },
  video: { video: { ...media, caption: SECRET } },
  audio: { audio: media },
  sticker: { sticker: media },
  location: { location: { latitude: -23.5, longitude: -46.6, name: SECRET, address: SECRET } },
  contacts: { contacts: [{ name: { formatted_name: SECRET, first_name: SECRET } }] },
  interactive: {
    interactive: {
      type: 'button',
      header: { type: 'text', text: SECRET },
      body: { text: SECRET },
      action: { buttons: [{ type: 'reply', reply: { id: SECRET, title: SECRET } }] },
    },
  },
  reaction: { reaction: { messageId: 'wamid.quoted', emoji: SECRET } },
}
