import type { MessageType } from '@dispatch/contracts'

const MEDIA_HINT = 'a media id from POST /api/third-party/media, or an https link'

function MediaField({ kind }: { kind: string }) {
  return (
    <label>
      {`The ${kind}: ${MEDIA_HINT}`}
      <input name="media" required maxLength={2048} autocomplete="off" />
    </label>
  )
}

function Caption() {
  return (
    <label>
      Caption (optional)
      <textarea name="caption" rows={2} maxLength={1024} />
    </label>
  )
}

/** The fields of a kind other than a template (which has its own picker), named as `kindBody` reads them. */
export function KindFields({ kind }: { kind: Exclude<MessageType, 'template'> }) {
  switch (kind) {
    case 'text':
      return (
        <label>
          Text
          <textarea name="text" required rows={3} maxLength={4096} />
        </label>
      )
    case 'image':
    case 'video':
      return (
        <>
          <MediaField kind={kind} />
          <Caption />
        </>
      )
    case 'document':
      return (
        <>
          <MediaField kind={kind} />
          <label>
            File name shown (optional)
            <input name="filename" maxLength={240} autocomplete="off" />
          </label>
          <Caption />
        </>
      )
    case 'audio':
    case 'sticker':
      return <MediaField kind={kind} />
    case 'location':
      return (
        <>
          <label>
            Latitude
            <input name="latitude" type="number" required min={-90} max={90} step="any" />
          </label>
          <label>
            Longitude
            <input name="longitude" type="number" required min={-180} max={180} step="any" />
          </label>
          <label>
            Place name (optional)
            <input name="placeName" maxLength={1000} autocomplete="off" />
          </label>
          <label>
            Address (optional)
            <input name="address" maxLength={1000} autocomplete="off" />
          </label>
        </>
      )
    case 'contacts':
      return (
        <>
          <label>
            Contact's first name
            <input name="firstName" required maxLength={256} autocomplete="off" />
          </label>
          <label>
            Contact's last name (optional)
            <input name="lastName" maxLength={256} autocomplete="off" />
          </label>
          <label>
            Contact's phone
            <input name="contactPhone" type="tel" required maxLength={64} autocomplete="off" />
          </label>
        </>
      )
    case 'interactive':
      return (
        <>
          <label>
            Message
            <textarea name="body" required rows={2} maxLength={1024} />
          </label>
          {[1, 2, 3].map((n) => (
            <label key={n}>
              {`Button ${n}${n === 1 ? '' : ' (optional)'}`}
              <input name={`button${n}`} required={n === 1} maxLength={20} autocomplete="off" />
            </label>
          ))}
        </>
      )
    case 'reaction':
      return (
        <>
          <label>
            React to (a message id, or its wamid)
            <input name="reactTo" required maxLength={256} autocomplete="off" />
          </label>
          <label>
            Emoji
            <input name="emoji" required maxLength={16} autocomplete="off" />
          </label>
        </>
      )
  }
}
