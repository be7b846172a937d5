import Type, { type Static, type TSchema } from 'typebox'

/**
 * The bodies of the sends beyond the spec's three (document, video, audio, sticker, location,
 * contacts, interactive, reaction), each the Cloud API's object for its type with Meta's limits, and
 * the rules a schema cannot say (`kindProblem`). Media goes by `mediaId` (uploaded through Dispatch
 * or to Meta directly) or by an `https` `link`, exactly one.
 */

const closed = { additionalProperties: false } as const
const Text = (maxLength: number, minLength = 1) => Type.String({ minLength, maxLength })
const NonBlank = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '\\S' })

export const HttpsLink = Type.String({
  maxLength: 2048,
  pattern: '^https://[^\\s/?#]+[^\\s]*$',
  description: 'An https URL the platform fetches the file from',
})

/** Where a file comes from: exactly one of these (checked at accept). */
const mediaSource = {
  mediaId: Type.Optional(NonBlank(256)),
  link: Type.Optional(HttpsLink),
}

export const DocumentObject = Type.Object(
  {
    ...mediaSource,
    caption: Type.Optional(Text(1024)),
    filename: Type.Optional(NonBlank(240)),
  },
  closed,
)
export const VideoObject = Type.Object({ ...mediaSource, caption: Type.Optional(Text(1024)) }, closed)
/** Audio and stickers take no caption (Meta refuses one). */
export const AudioObject = Type.Object(mediaSource, closed)
export const StickerObject = Type.Object(mediaSource, closed)

export const LocationObject = Type.Object(
  {
    latitude: Type.Number({ minimum: -90, maximum: 90 }),
    longitude: Type.Number({ minimum: -180, maximum: 180 }),
    name: Type.Optional(Text(1000)),
    address: Type.Optional(Text(1000)),
  },
  closed,
)

const typed = (values: readonly string[]) => Type.Optional(Type.Enum(values))
/** One contact card, as the Cloud API's `contacts[]`: a `name.formatted_name` and what else is known. */
export const ContactCard = Type.Object(
  {
    name: Type.Object(
      {
        formatted_name: NonBlank(256),
        first_name: Type.Optional(Text(256)),
        last_name: Type.Optional(Text(256)),
        middle_name: Type.Optional(Text(256)),
        suffix: Type.Optional(Text(64)),
        prefix: Type.Optional(Text(64)),
      },
      closed,
    ),
    phones: Type.Optional(
      Type.Array(
        Type.Object(
          {
            phone: Text(64),
            type: typed(['CELL', 'MAIN', 'IPHONE', 'HOME', 'WORK']),
            wa_id: Type.Optional(Text(32)),
          },
          closed,
        ),
        { maxItems: 20 },
      ),
    ),
    emails: Type.Optional(
      Type.Array(Type.Object({ email: Text(320), type: typed(['HOME', 'WORK']) }, closed), { maxItems: 20 }),
    ),
    urls: Type.Optional(
      Type.Array(Type.Object({ url: Text(2048), type: typed(['HOME', 'WORK']) }, closed), { maxItems: 20 }),
    ),
    addresses: Type.Optional(
      Type.Array(
        Type.Object(
          {
            street: Type.Optional(Text(512)),
            city: Type.Optional(Text(256)),
            state: Type.Optional(Text(256)),
            zip: Type.Optional(Text(32)),
            country: Type.Optional(Text(256)),
            country_code: Type.Optional(Type.String({ pattern: '^[A-Za-z]{2}$' })),
            type: typed(['HOME', 'WORK']),
          },
          closed,
        ),
        { maxItems: 20 },
      ),
    ),
    org: Type.Optional(
      Type.Object(
        {
          company: Type.Optional(Text(256)),
          department: Type.Optional(Text(256)),
          title: Type.Optional(Text(256)),
        },
        closed,
      ),
    ),
    birthday: Type.Optional(Type.String({ format: 'date', description: 'YYYY-MM-DD' })),
  },
  closed,
)
export const ContactsArray = Type.Array(ContactCard, { minItems: 1, maxItems: 20 })

const BodyText = Type.Object({ text: NonBlank(1024) }, closed)
const FooterText = Type.Object({ text: NonBlank(60) }, closed)
const TextHeader = Type.Object({ type: Type.Literal('text'), text: NonBlank(60) }, closed)
const mediaHeader = <T extends 'image' | 'video' | 'document'>(type: T) =>
  Type.Object({ type: Type.Literal(type), [type]: Type.Object(mediaSource, closed) }, closed)
/** A reply-button or call-to-action message's header: text, or an image, video or document. */
const AnyHeader = Type.Unsafe<
  | Static<typeof TextHeader>
  | { type: 'image' | 'video' | 'document'; image?: MediaSource; video?: MediaSource; document?: MediaSource }
>({
  oneOf: [TextHeader, mediaHeader('image'), mediaHeader('video'), mediaHeader('document')],
  discriminator: { propertyName: 'type' },
})
type MediaSource = { mediaId?: string; link?: string }

export const INTERACTIVE_TYPES = ['button', 'list', 'cta_url', 'location_request_message'] as const

const ReplyButtons = Type.Object(
  {
    type: Type.Literal('button'),
    header: Type.Optional(AnyHeader),
    body: BodyText,
    footer: Type.Optional(FooterText),
    action: Type.Object(
      {
        buttons: Type.Array(
          Type.Object(
            {
              type: Type.Literal('reply'),
              reply: Type.Object({ id: NonBlank(256), title: NonBlank(20) }, closed),
            },
            closed,
          ),
          { minItems: 1, maxItems: 3 },
        ),
      },
      closed,
    ),
  },
  closed,
)
const ListMessage = Type.Object(
  {
    type: Type.Literal('list'),
    header: Type.Optional(TextHeader),
    body: BodyText,
    footer: Type.Optional(FooterText),
    action: Type.Object(
      {
        button: NonBlank(20),
        sections: Type.Array(
          Type.Object(
            {
              title: Type.Optional(NonBlank(24)),
              rows: Type.Array(
                Type.Object(
                  { id: NonBlank(200), title: NonBlank(24), description: Type.Optional(Text(72)) },
                  closed,
                ),
                { minItems: 1, maxItems: 10 },
              ),
            },
            closed,
          ),
          { minItems: 1, maxItems: 10 },
        ),
      },
      closed,
    ),
  },
  closed,
)
const CallToActionUrl = Type.Object(
  {
    type: Type.Literal('cta_url'),
    header: Type.Optional(AnyHeader),
    body: BodyText,
    footer: Type.Optional(FooterText),
    action: Type.Object(
      {
        name: Type.Literal('cta_url'),
        parameters: Type.Object({ display_text: NonBlank(20), url: HttpsLink }, closed),
      },
      closed,
    ),
  },
  closed,
)
const LocationRequest = Type.Object(
  {
    type: Type.Literal('location_request_message'),
    body: BodyText,
    action: Type.Object({ name: Type.Literal('send_location') }, closed),
  },
  closed,
)
export type InteractiveObject =
  | Static<typeof ReplyButtons>
  | Static<typeof ListMessage>
  | Static<typeof CallToActionUrl>
  | Static<typeof LocationRequest>
/**
 * The Cloud API's `interactive` object, told apart by its `type` (so a mistake is reported from the
 * right one of the four shapes): reply buttons, a list, a call-to-action URL button, a location request.
 */
export const InteractiveObject = Type.Unsafe<InteractiveObject>({
  oneOf: [ReplyButtons, ListMessage, CallToActionUrl, LocationRequest],
  discriminator: { propertyName: 'type' },
  description: 'type: button (1–3 reply buttons), list (≤ 10 rows in all), cta_url, location_request_message',
})

export const ReactionObject = Type.Object(
  {
    messageId: Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: '\\S',
      description: "The message reacted to: a Dispatch messageId (sent or received) or the platform's wamid",
    }),
    emoji: Type.String({ maxLength: 32, description: 'One emoji; an empty string removes the reaction' }),
  },
  closed,
)

/** What each new kind's body holds under its own key (`document`, `location`…). */
export const KIND_OBJECTS = {
  document: DocumentObject,
  video: VideoObject,
  audio: AudioObject,
  sticker: StickerObject,
  location: LocationObject,
  contacts: ContactsArray,
  interactive: InteractiveObject,
  reaction: ReactionObject,
} as const satisfies Record<string, TSchema>

const MEDIA_KEYS = new Set(['image', 'document', 'video', 'audio', 'sticker'])

const mediaProblem = (media: MediaSource, field: string) =>
  (media.mediaId === undefined) === (media.link === undefined)
    ? `${field} must have either mediaId or link${media.mediaId === undefined ? '' : ', not both'}`
    : undefined

function duplicate(values: string[], what: string, field: string): string | undefined {
  const seen = new Set<string>()
  for (const value of values) {
    if (seen.has(value)) return `${field} has two ${what} ${JSON.stringify(value)}: each must be unique`
    seen.add(value)
  }
  return undefined
}

function interactiveProblem(object: InteractiveObject, field: string): string | undefined {
  const header = 'header' in object ? object.header : undefined
  if (header && header.type !== 'text') {
    const problem = mediaProblem(header[header.type] as MediaSource, `${field}.header.${header.type}`)
    if (problem) return problem
  }
  if (object.type === 'button') {
    const buttons = object.action.buttons
    return (
      duplicate(
        buttons.map((b) => b.reply.id),
        'button ids',
        `${field}.action.buttons`,
      ) ??
      duplicate(
        buttons.map((b) => b.reply.title),
        'button titles',
        `${field}.action.buttons`,
      )
    )
  }
  if (object.type === 'list') {
    const sections = object.action.sections
    const rows = sections.flatMap((s) => s.rows)
    if (rows.length > 10)
      return `${field}.action.sections must hold at most 10 rows in all (it holds ${rows.length})`
    if (sections.length > 1) {
      const untitled = sections.findIndex((s) => s.title === undefined)
      if (untitled >= 0)
        return `${field}.action.sections[${untitled}].title is required when there are several sections`
    }
    return duplicate(
      rows.map((r) => r.id),
      'row ids',
      `${field}.action.sections`,
    )
  }
  return undefined
}

/**
 * What a body valid against its schema still gets wrong, as Meta would refuse it, naming the field:
 * a file with neither or both of `mediaId` and `link`, a contact card with only a formatted name,
 * duplicate button or row ids, more than 10 list rows in all. Undefined when nothing is.
 */
export function kindProblem(type: string, body: Record<string, unknown>, field: string): string | undefined {
  if (MEDIA_KEYS.has(type)) return mediaProblem(body[type] as MediaSource, `${field}.${type}`)
  if (type === 'interactive')
    return interactiveProblem(body.interactive as InteractiveObject, `${field}.interactive`)
  if (type === 'contacts') {
    const cards = body.contacts as Array<Static<typeof ContactCard>>
    const at = cards.findIndex(
      (c) => !(c.name.first_name || c.name.last_name || c.name.middle_name || c.name.prefix || c.name.suffix),
    )
    if (at >= 0) {
      return `${field}.contacts[${at}].name needs first_name, last_name, middle_name, prefix or suffix beside formatted_name`
    }
  }
  return undefined
}
