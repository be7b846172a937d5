import { templateVariables } from '@dispatch/contracts'
import { graphError, type ScriptedAnswer } from './graph-error.ts'

/** A message template as the Cloud API lists it (`GET /{waba-id}/message_templates`). */
export interface FakeTemplate {
  id: string
  name: string
  language: string
  status: string
  category: string
  components: unknown[]
  parameter_format?: 'POSITIONAL' | 'NAMED'
  quality_score?: { score: string }
  rejected_reason?: string
}

/**
 * The fake platform's template catalogs, per WhatsApp Business Account, and which business numbers
 * belong to which account. A template send from a number linked to an account is checked as Meta
 * checks it (132001 unknown name or language, 132000 wrong number of body parameters, 132015 paused,
 * 132016 disabled); a number linked to none sends any template, as the fake always has.
 */
export class FakeTemplateCatalogs {
  readonly #catalogs = new Map<string, FakeTemplate[]>()
  readonly #accounts = new Map<string, string>()
  readonly #tokens = new Map<string, string>()
  /** How long each page takes to answer. */
  latencyMs = 0

  /** Replaces an account's catalog. */
  set(wabaId: string, templates: FakeTemplate[]): void {
    this.#catalogs.set(
      wabaId,
      templates.map((t) => ({ ...t })),
    )
  }

  get(wabaId: string): FakeTemplate[] {
    return this.#catalogs.get(wabaId) ?? []
  }

  /** Changes one template of an account (its status, say), as Meta does before a webhook. */
  update(wabaId: string, name: string, language: string, changes: Partial<FakeTemplate>): FakeTemplate {
    const template = this.get(wabaId).find((t) => t.name === name && t.language === language)
    if (!template) throw new Error(`no template ${name} (${language}) in account ${wabaId}`)
    Object.assign(template, changes)
    return template
  }

  /** The only token this account's catalog is read with (others get 190, as an expired token). */
  requireToken(wabaId: string, token: string): void {
    this.#tokens.set(wabaId, token)
  }

  link(phoneNumberId: string, wabaId: string): void {
    this.#accounts.set(phoneNumberId, wabaId)
  }

  /** One page of an account's catalog, as the Graph API answers (`after` is the cursor). */
  page(wabaId: string, url: URL, authorization: string | undefined): ScriptedAnswer {
    const token = this.#tokens.get(wabaId)
    if (
      !authorization?.startsWith('Bearer ') ||
      (token !== undefined && authorization !== `Bearer ${token}`)
    ) {
      return graphError(190, 'Error validating access token: Session has expired', 401)
    }
    const templates = this.#catalogs.get(wabaId)
    if (!templates)
      return graphError(100, `Unsupported get request. Object with ID '${wabaId}' does not exist`)
    const limit = Math.max(1, Math.min(1000, Number(url.searchParams.get('limit') ?? 25) || 25))
    const after = url.searchParams.get('after')
    const start = after ? Number(Buffer.from(after, 'base64url').toString('utf8')) : 0
    const data = templates.slice(start, start + limit)
    const cursor = (n: number) => Buffer.from(String(n), 'utf8').toString('base64url')
    const more = start + limit < templates.length
    const next = new URL(url)
    next.searchParams.set('after', cursor(start + limit))
    return {
      status: 200,
      delayMs: this.latencyMs,
      body: {
        data,
        paging: {
          cursors: { before: cursor(start), after: cursor(start + data.length) },
          ...(more ? { next: next.toString() } : {}),
        },
      },
    }
  }

  /** Meta's refusal of a template send from this number, or undefined when it would go out. */
  refusal(phoneNumberId: string, body: Record<string, unknown>): ScriptedAnswer | undefined {
    const wabaId = this.#accounts.get(phoneNumberId)
    if (wabaId === undefined || body.type !== 'template') return undefined
    const sent = body.template as { name?: string; language?: { code?: string }; components?: unknown[] }
    const template = this.get(wabaId).find(
      (t) => t.name === sent?.name && t.language === sent?.language?.code,
    )
    if (!template || template.status === 'REJECTED' || template.status === 'PENDING') {
      return graphError(132001, 'Template name does not exist in the translation')
    }
    if (template.status === 'PAUSED') return graphError(132015, 'Template is paused')
    if (template.status === 'DISABLED') return graphError(132016, 'Template is disabled')
    const expected = templateVariables(template.components, template.parameter_format).body.length
    const components = (sent.components ?? []) as Array<{ type?: string; parameters?: unknown[] }>
    const given = components.find((c) => c.type === 'body')?.parameters?.length ?? 0
    if (given !== expected) {
      return graphError(
        132000,
        `Number of parameters does not match the expected number of params (expected ${expected}, got ${given})`,
      )
    }
    return undefined
  }
}

/** The account the fake's CLI plays, and its templates: what docs/templates.md's walkthrough syncs. */
export const DEMO_WABA_ID = '102290129340398'

export const demoTemplates = (): FakeTemplate[] => [
  {
    id: '1001',
    name: 'order_shipped',
    language: 'pt_BR',
    status: 'APPROVED',
    category: 'UTILITY',
    parameter_format: 'POSITIONAL',
    quality_score: { score: 'GREEN' },
    components: [
      { type: 'HEADER', format: 'IMAGE' },
      { type: 'BODY', text: 'Olá {{1}}, seu pedido {{2}} foi enviado.' },
      { type: 'BUTTONS', buttons: [{ type: 'URL', text: 'Rastrear', url: 'https://acme.test/{{1}}' }] },
    ],
  },
  {
    id: '1002',
    name: 'appointment_reminder',
    language: 'en_US',
    status: 'APPROVED',
    category: 'UTILITY',
    parameter_format: 'NAMED',
    quality_score: { score: 'GREEN' },
    components: [
      { type: 'BODY', text: 'Hi {{first_name}}, see you on {{date}}.' },
      { type: 'FOOTER', text: 'Reply STOP to opt out' },
    ],
  },
  {
    id: '1003',
    name: 'we_miss_you',
    language: 'en_US',
    status: 'APPROVED',
    category: 'MARKETING',
    parameter_format: 'POSITIONAL',
    quality_score: { score: 'YELLOW' },
    components: [
      { type: 'HEADER', format: 'TEXT', text: 'A gift for {{1}}' },
      { type: 'BODY', text: 'Come back this week for {{1}} off.' },
      { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'Stop promotions' }] },
    ],
  },
  {
    id: '1004',
    name: 'flash_sale',
    language: 'en_US',
    status: 'PAUSED',
    category: 'MARKETING',
    parameter_format: 'POSITIONAL',
    quality_score: { score: 'RED' },
    components: [{ type: 'BODY', text: 'Everything {{1}} off today only!' }],
  },
  {
    id: '1005',
    name: 'password_hint',
    language: 'en_US',
    status: 'REJECTED',
    category: 'UTILITY',
    parameter_format: 'POSITIONAL',
    rejected_reason: 'INVALID_FORMAT',
    components: [{ type: 'BODY', text: 'Your hint is {{1}}' }],
  },
]
