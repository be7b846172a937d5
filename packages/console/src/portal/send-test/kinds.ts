import { MESSAGE_TYPES, type MessageType, SEND_SCOPE } from '@dispatch/contracts'
import { text } from '../../ui/format.ts'

/** What each kind is called on the form. */
export const KIND_LABELS: Record<MessageType, string> = {
  text: 'Text',
  template: 'Template',
  image: 'Image',
  document: 'Document',
  video: 'Video',
  audio: 'Audio',
  sticker: 'Sticker',
  location: 'Location',
  contacts: 'Contact card',
  interactive: 'Reply buttons (interactive)',
  reaction: 'Reaction',
}

/** The kinds a key may send: those whose send scope it was approved with. */
export const kindsFor = (scopes: readonly string[]): MessageType[] =>
  MESSAGE_TYPES.filter((kind) => scopes.includes(SEND_SCOPE[kind]))

/** A file named by a media id (`POST /media`'s answer) or an https link, as one field gives it. */
const media = (form: FormData) => {
  const value = text(form, 'media') ?? ''
  return value.startsWith('https://') ? { link: value } : { mediaId: value }
}

/** Only the optional fields given: an empty one is left out, as the API reads "not given". */
const given = (fields: Record<string, string | undefined>) =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined))

/** The kind's own part of the send body (beside the recipient), from the form; not the template's. */
export function kindBody(kind: Exclude<MessageType, 'template'>, form: FormData): Record<string, unknown> {
  const field = (name: string) => text(form, name)
  switch (kind) {
    case 'text':
      return { text: field('text') ?? '' }
    case 'image':
      return { image: { ...media(form), ...given({ text: field('caption') }) } }
    case 'document':
      return {
        document: { ...media(form), ...given({ caption: field('caption'), filename: field('filename') }) },
      }
    case 'video':
      return { video: { ...media(form), ...given({ caption: field('caption') }) } }
    case 'audio':
    case 'sticker':
      return { [kind]: media(form) }
    case 'location':
      return {
        location: {
          latitude: Number(field('latitude')),
          longitude: Number(field('longitude')),
          ...given({ name: field('placeName'), address: field('address') }),
        },
      }
    case 'contacts': {
      const first = field('firstName') ?? ''
      const last = field('lastName')
      return {
        contacts: [
          {
            name: {
              formatted_name: last ? `${first} ${last}` : first,
              first_name: first,
              ...given({ last_name: last }),
            },
            phones: [{ phone: field('contactPhone') ?? '', type: 'CELL' }],
          },
        ],
      }
    }
    case 'interactive': {
      const titles = [1, 2, 3].map((n) => field(`button${n}`)).filter((title) => title !== undefined)
      return {
        interactive: {
          type: 'button',
          body: { text: field('body') ?? '' },
          action: {
            buttons: titles.map((title, index) => ({
              type: 'reply',
              reply: { id: `button-${index + 1}`, title },
            })),
          },
        },
      }
    }
    case 'reaction':
      return { reaction: { messageId: field('reactTo') ?? '', emoji: field('emoji') ?? '' } }
  }
}
