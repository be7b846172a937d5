import {
  type ConsentConfirmation,
  DEFAULT_KEYWORDS,
  type KeywordLists,
  type MessageFallback,
  type ServiceWindowPolicy,
  type TemplateVariables,
} from '@dispatch/contracts'
import type { SenderSendRules } from '@dispatch/db'
import { type MessagingLimit, messagingLimitOf } from '@dispatch/runtime'

/** A template as a send is checked against it. */
export interface KnownTemplate {
  status: string
  rejectedReason: string | null
  category: string | null
  variables: TemplateVariables
}

/** One sender's rules, ready for lookups on the hot path. */
export interface SenderRules {
  phoneNumberId: string
  serviceWindowPolicy: ServiceWindowPolicy
  /** At most `count` marketing messages per recipient within `hours`; null: no cap. */
  marketingCap: { count: number; hours: number } | null
  /** The keywords replies to its number are matched against: its own, or the defaults. */
  keywords: KeywordLists
  /** The texts sent back when a keyword opts a user out or in; null: none. */
  consentConfirmation: ConsentConfirmation | null
  /** The channel fallback a send without one carries, when its key holds `send:sms-fallback`. */
  defaultFallback: MessageFallback | null
  /** Its portfolio's messaging limit: under `refuse`, a template past it is refused at the door. */
  messagingLimit: MessagingLimit
  /** False until its catalog was synced once: template sends then go unchecked. */
  synced: boolean
  /** By `name` NUL `language`. */
  templates: Map<string, KnownTemplate>
  /** Each template name's languages, to say which exist when the asked one does not. */
  languages: Map<string, string[]>
}

export const templateKey = (name: string, language: string) => `${name}\u0000${language}`

export function toSenderRules(loaded: SenderSendRules): SenderRules {
  const templates = new Map<string, KnownTemplate>()
  const languages = new Map<string, string[]>()
  for (const t of loaded.templates) {
    templates.set(templateKey(t.name, t.language), {
      status: t.status,
      rejectedReason: t.rejectedReason,
      category: t.category,
      variables: t.variables,
    })
    const list = languages.get(t.name)
    if (list) list.push(t.language)
    else languages.set(t.name, [t.language])
  }
  return {
    phoneNumberId: loaded.phoneNumberId,
    serviceWindowPolicy: loaded.serviceWindowPolicy,
    marketingCap: loaded.marketingCap,
    keywords: loaded.consentKeywords ?? DEFAULT_KEYWORDS,
    consentConfirmation: loaded.consentConfirmation,
    defaultFallback: loaded.defaultFallback,
    messagingLimit: messagingLimitOf({ id: loaded.senderId, ...loaded }),
    synced: loaded.templatesSyncedAt !== null,
    templates,
    languages,
  }
}
