/** One template as `GET /{waba-id}/message_templates` lists it (the fields Dispatch reads). */
export interface GraphTemplate {
  id: string
  name: string
  language: string
  status: string
  category?: string
  components?: unknown[]
  parameter_format?: string
  quality_score?: { score?: string }
  rejected_reason?: string
}

/** Why a sync could not read the catalog: the token was refused, or the platform failed otherwise. */
export class TemplateFetchError extends Error {
  override name = 'TemplateFetchError'
  readonly kind: 'token-refused' | 'platform'
  readonly code: string

  constructor(kind: 'token-refused' | 'platform', code: string, message: string) {
    super(message)
    this.kind = kind
    this.code = code
  }
}

export interface TemplateFetchOptions {
  /** The Graph API base, with its version (`WHATSAPP_API_URL`). */
  apiUrl: string
  wabaId: string
  accessToken: string
  timeoutMs: number
  /** Templates per page (Meta's default is 25; up to 1,000 are asked for here). */
  pageSize?: number
}

const FIELDS = 'id,name,language,status,category,components,parameter_format,quality_score,rejected_reason'
/** A catalog is about 250 templates (more for verified businesses): this many pages is a loop. */
const MAX_PAGES = 1000

/**
 * Every template of an account, page after page, following the cursor (`paging.cursors.after`
 * while `paging.next` says there is more). The `next` URL itself is not followed: it names a host,
 * and the token goes only to the configured API.
 */
export async function fetchTemplates(options: TemplateFetchOptions): Promise<GraphTemplate[]> {
  const templates: GraphTemplate[] = []
  let after: string | undefined
  for (let page = 0; page < MAX_PAGES; page++) {
    const url = new URL(`${options.apiUrl.replace(/\/+$/, '')}/${options.wabaId}/message_templates`)
    url.searchParams.set('fields', FIELDS)
    url.searchParams.set('limit', String(options.pageSize ?? 250))
    if (after) url.searchParams.set('after', after)
    const body = await getJson(url, options)
    const data = Array.isArray(body.data) ? body.data : []
    for (const item of data) if (isTemplate(item)) templates.push(item)
    const paging = body.paging as { next?: unknown; cursors?: { after?: unknown } } | undefined
    const next = paging?.cursors?.after
    if (!paging?.next || typeof next !== 'string' || next === after || data.length === 0) return templates
    after = next
  }
  throw new TemplateFetchError('platform', 'TOO_MANY_PAGES', `More than ${MAX_PAGES} pages of templates`)
}

const isTemplate = (item: unknown): item is GraphTemplate => {
  const t = item as Partial<GraphTemplate> | null
  return (
    typeof t?.id === 'string' &&
    typeof t.name === 'string' &&
    typeof t.language === 'string' &&
    typeof t.status === 'string'
  )
}

/**
 * The messaging limit of the portfolio a business number is in, as the Graph API reads it on the
 * number (`GET /{phone-number-id}?fields=whatsapp_business_manager_messaging_limit`): a tier name
 * (`TIER_250`, `TIER_2K`, `TIER_10K`, `TIER_100K`, `TIER_UNLIMITED`), or undefined when the answer
 * has none. (`messaging_limit_tier`, the number's own, is deprecated.)
 */
export async function fetchMessagingLimitTier(
  options: Pick<TemplateFetchOptions, 'apiUrl' | 'accessToken' | 'timeoutMs'> & { phoneNumberId: string },
): Promise<string | undefined> {
  const url = new URL(`${options.apiUrl.replace(/\/+$/, '')}/${options.phoneNumberId}`)
  url.searchParams.set('fields', 'whatsapp_business_manager_messaging_limit')
  const tier = (await getJson(url, options)).whatsapp_business_manager_messaging_limit
  return typeof tier === 'string' && /^TIER_[A-Z0-9]{1,12}$/i.test(tier) ? tier.toUpperCase() : undefined
}

async function getJson(
  url: URL,
  options: Pick<TemplateFetchOptions, 'accessToken' | 'timeoutMs'>,
): Promise<Record<string, unknown>> {
  let res: Response
  try {
    res = await fetch(url, {
      headers: { authorization: `Bearer ${options.accessToken}` },
      signal: AbortSignal.timeout(options.timeoutMs),
    })
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError'
    throw new TemplateFetchError(
      'platform',
      timedOut ? 'TIMEOUT' : 'NETWORK',
      timedOut
        ? `The Graph API did not answer within ${options.timeoutMs} ms`
        : 'The Graph API could not be reached',
    )
  }
  const text = await res.text()
  let body: Record<string, unknown> = {}
  try {
    const parsed: unknown = JSON.parse(text)
    if (parsed && typeof parsed === 'object') body = parsed as Record<string, unknown>
  } catch {
    // Not JSON: judged by its status below.
  }
  if (res.ok) return body
  const error = (body.error ?? {}) as { code?: unknown; message?: unknown }
  const code = typeof error.code === 'number' ? String(error.code) : `HTTP_${res.status}`
  const message = typeof error.message === 'string' ? error.message : `The Graph API answered ${res.status}`
  const refused = res.status === 401 || code === '190'
  throw new TemplateFetchError(refused ? 'token-refused' : 'platform', code, message)
}
