import {
  FALLBACK_AFTER_MAX_SECONDS,
  FALLBACK_AFTER_MIN_SECONDS,
  type UpdateSenderBody,
} from '@dispatch/contracts'
import { text } from '../../ui/format.ts'

/** The settings the form edits, as the sender view holds them. */
export interface SenderSettingsView {
  source: 'environment' | 'admin'
  wabaId: string | null
  serviceWindowPolicy: 'off' | 'enforce'
  marketingCap: { count: number; hours: number } | null
  inboundContentRetention: 'retain' | 'discard' | number
  consentKeywords: { optOut: string[]; optIn: string[] } | null
  consentConfirmation: { optOut?: string; optIn?: string } | null
  businessId: string | null
  messagingLimitPolicy: 'hold' | 'refuse' | 'off'
  messagingLimitOverride: number | null
  defaultFallback: { sms: { text: string }; afterSeconds?: number } | null
}

const LIMIT_POLICIES = {
  hold: 'hold: a template past the limit waits until the 24 hours free room',
  refuse: 'refuse: a template past the limit is refused (422)',
  off: 'off: nothing counted, Meta decides',
} as const

const words = (value: string | undefined) =>
  (value ?? '')
    .split(',')
    .map((word) => word.trim())
    .filter((word) => word !== '')

/**
 * The form's fields as one PATCH: every setting is sent, an emptied field clearing it (no cap, the
 * default keywords, no confirmation), so what the page shows after saving is what the sender holds.
 */
export function settingsChange(form: FormData): UpdateSenderBody {
  const capCount = text(form, 'capCount')
  const capHours = text(form, 'capHours')
  const retention = text(form, 'retention') ?? 'retain'
  const optOut = words(text(form, 'optOutKeywords'))
  const optIn = words(text(form, 'optInKeywords'))
  const confirmOut = text(form, 'confirmOptOut')
  const confirmIn = text(form, 'confirmOptIn')
  const policy = text(form, 'messagingLimitPolicy')
  const limit = text(form, 'messagingLimitOverride')
  const smsText = text(form, 'fallbackSms')
  const after = text(form, 'fallbackAfterSeconds')
  return {
    wabaId: text(form, 'wabaId') ?? null,
    serviceWindowPolicy: text(form, 'serviceWindowPolicy') === 'enforce' ? 'enforce' : 'off',
    marketingCap: capCount && capHours ? { count: Number(capCount), hours: Number(capHours) } : null,
    inboundContentRetention:
      retention === 'retain' || retention === 'discard'
        ? retention
        : Number(text(form, 'retentionHours') ?? 24),
    consentKeywords: optOut.length > 0 ? { optOut, optIn } : null,
    consentConfirmation:
      confirmOut || confirmIn
        ? { ...(confirmOut ? { optOut: confirmOut } : {}), ...(confirmIn ? { optIn: confirmIn } : {}) }
        : null,
    businessId: text(form, 'businessId') ?? null,
    messagingLimitPolicy: policy === 'refuse' || policy === 'off' ? policy : 'hold',
    messagingLimitOverride: limit ? Number(limit) : null,
    defaultFallback: smsText
      ? { sms: { text: smsText }, ...(after ? { afterSeconds: Number(after) } : {}) }
      : null,
  }
}

/**
 * A sender's settings in the page: the account, the window policy, the cap, retention, consent,
 * the messaging limit.
 */
export function SenderSettingsForm(props: {
  sender: SenderSettingsView
  pending: boolean
  onSave: (change: UpdateSenderBody) => void
}) {
  const { sender } = props
  const retention = sender.inboundContentRetention
  const save = (event: SubmitEvent) => {
    event.preventDefault()
    props.onSave(settingsChange(new FormData(event.currentTarget as HTMLFormElement)))
  }
  return (
    <form class="stack" aria-label="Settings" onSubmit={save}>
      <label>
        WhatsApp Business Account id (its templates are synced from it)
        <input name="wabaId" inputMode="numeric" pattern="[0-9]{1,32}" defaultValue={sender.wabaId ?? ''} />
      </label>
      <label>
        24-hour window
        <select name="serviceWindowPolicy">
          <option value="off" selected={sender.serviceWindowPolicy === 'off'}>
            off: free-form messages go to anyone
          </option>
          <option value="enforce" selected={sender.serviceWindowPolicy === 'enforce'}>
            enforce: free-form only inside the customer's window
          </option>
        </select>
      </label>
      <fieldset>
        <legend>Marketing cap per recipient (empty: none)</legend>
        <div class="row tight">
          <label>
            At most
            <input
              name="capCount"
              type="number"
              min="1"
              max="1000"
              defaultValue={String(sender.marketingCap?.count ?? '')}
            />
          </label>
          <label>
            messages in hours
            <input
              name="capHours"
              type="number"
              min="1"
              max="720"
              defaultValue={String(sender.marketingCap?.hours ?? '')}
            />
          </label>
        </div>
      </fieldset>
      <fieldset>
        <legend>Content of replies</legend>
        <div class="row tight">
          <label>
            Kept
            <select name="retention">
              <option value="retain" selected={retention === 'retain'}>
                kept
              </option>
              <option value="discard" selected={retention === 'discard'}>
                never stored
              </option>
              <option value="hours" selected={typeof retention === 'number'}>
                redacted after hours
              </option>
            </select>
          </label>
          <label>
            Hours
            <input
              name="retentionHours"
              type="number"
              min="1"
              defaultValue={typeof retention === 'number' ? String(retention) : ''}
            />
          </label>
        </div>
      </fieldset>
      <fieldset>
        <legend>Consent keywords (comma-separated; empty: the defaults)</legend>
        <label>
          Opt out
          <input name="optOutKeywords" defaultValue={sender.consentKeywords?.optOut.join(', ') ?? ''} />
        </label>
        <label>
          Opt back in
          <input name="optInKeywords" defaultValue={sender.consentKeywords?.optIn.join(', ') ?? ''} />
        </label>
      </fieldset>
      <fieldset>
        <legend>Confirmations sent back (empty: none)</legend>
        <label>
          After an opt-out
          <input name="confirmOptOut" defaultValue={sender.consentConfirmation?.optOut ?? ''} />
        </label>
        <label>
          After an opt-in
          <input name="confirmOptIn" defaultValue={sender.consentConfirmation?.optIn ?? ''} />
        </label>
      </fieldset>
      <fieldset>
        <legend>Messaging limit (unique users reached outside their window in 24 hours)</legend>
        <label>
          Business portfolio id (its numbers share one limit; empty: the number's own)
          <input
            name="businessId"
            inputMode="numeric"
            pattern="[0-9]{1,32}"
            defaultValue={sender.businessId ?? ''}
          />
        </label>
        <label>
          Past the limit
          <select name="messagingLimitPolicy">
            {Object.entries(LIMIT_POLICIES).map(([value, label]) => (
              <option key={value} value={value} selected={sender.messagingLimitPolicy === value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Limit set by an admin (empty: the tier Meta reports)
          <input
            name="messagingLimitOverride"
            type="number"
            min="1"
            max="100000000"
            defaultValue={String(sender.messagingLimitOverride ?? '')}
          />
        </label>
      </fieldset>
      <fieldset>
        <legend>SMS fallback of sends that carry none (keys with send:sms-fallback; empty: none)</legend>
        <label>
          SMS text
          <textarea
            name="fallbackSms"
            maxLength={1600}
            rows={2}
            defaultValue={sender.defaultFallback?.sms.text ?? ''}
          />
        </label>
        <label>
          Also when not delivered within seconds of WhatsApp's sent (empty: never)
          <input
            name="fallbackAfterSeconds"
            type="number"
            min={FALLBACK_AFTER_MIN_SECONDS}
            max={FALLBACK_AFTER_MAX_SECONDS}
            defaultValue={String(sender.defaultFallback?.afterSeconds ?? '')}
          />
        </label>
      </fieldset>
      <div class="row">
        <button type="submit" disabled={props.pending}>
          Save settings
        </button>
      </div>
    </form>
  )
}
