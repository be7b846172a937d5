import type {
  ConsentConfirmation,
  ConsentKeywords,
  MessageFallback,
  MessagingLimitPolicy,
  ServiceWindowPolicy,
  TemplateVariables,
} from '@dispatch/contracts'
import { eq, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { messageTemplates } from '../schema/message-templates.ts'
import { senders } from '../schema/senders.ts'

/** What the API checks a send against, for one sender: its settings and its templates. */
export interface SenderSendRules {
  senderId: string
  phoneNumberId: string
  serviceWindowPolicy: ServiceWindowPolicy
  marketingCap: { count: number; hours: number } | null
  /** Its own keywords (null: the defaults), and the texts sent back when a keyword applies. */
  consentKeywords: ConsentKeywords | null
  consentConfirmation: ConsentConfirmation | null
  /** The fallback a send carries when it has none of its own (its key allowing); null: none. */
  defaultFallback: MessageFallback | null
  /** Null: never synced, so template sends are not checked. */
  templatesSyncedAt: Date | null
  /** What decides its messaging limit (@dispatch/runtime, messaging-limit.ts). */
  wabaId: string | null
  businessId: string | null
  messagingLimitTier: string | null
  messagingLimitOverride: number | null
  messagingLimitPolicy: MessagingLimitPolicy
  templates: Array<{
    name: string
    language: string
    status: string
    rejectedReason: string | null
    category: string | null
    variables: TemplateVariables
  }>
}

/** One sender's rules (undefined: no such sender). */
export async function loadSenderSendRules(db: Db, senderId: string): Promise<SenderSendRules | undefined> {
  const [sender] = await db
    .select({
      senderId: senders.id,
      phoneNumberId: senders.phoneNumberId,
      serviceWindowPolicy: senders.serviceWindowPolicy,
      marketingCap: senders.marketingCap,
      consentKeywords: senders.consentKeywords,
      consentConfirmation: senders.consentConfirmation,
      defaultFallback: senders.defaultFallback,
      templatesSyncedAt: senders.templatesSyncedAt,
      wabaId: senders.wabaId,
      businessId: senders.businessId,
      messagingLimitTier: senders.messagingLimitTier,
      messagingLimitOverride: senders.messagingLimitOverride,
      messagingLimitPolicy: senders.messagingLimitPolicy,
    })
    .from(senders)
    .where(eq(senders.id, senderId))
  if (!sender) return undefined
  const templates = await db
    .select({
      name: messageTemplates.name,
      language: messageTemplates.language,
      status: messageTemplates.status,
      rejectedReason: messageTemplates.rejectedReason,
      category: messageTemplates.category,
      variables: messageTemplates.variables,
    })
    .from(messageTemplates)
    .where(eq(messageTemplates.senderId, senderId))
  return { ...sender, templates }
}

/**
 * Each sender's version of its rules: changes when the sender or any of its templates changes, or
 * a template is removed (the count). A cache compares these to know whom to reload.
 */
export async function sendRulesVersions(db: Db, senderId?: string): Promise<Map<string, string>> {
  const rows = await db.execute<{ id: string; version: string }>(sql`
    select s.id, concat_ws('/', s.updated_at, s.health_updated_at, s.templates_synced_at, max(t.updated_at), count(t.id)) as version
    from senders s left join message_templates t on t.sender_id = s.id
    ${senderId === undefined ? sql`` : sql`where s.id = ${senderId}`}
    group by s.id`)
  return new Map(rows.map((row) => [row.id, row.version]))
}
