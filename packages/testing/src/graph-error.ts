/** A scripted answer: a status, an optional JSON body and headers, after an optional delay. */
export interface ScriptedAnswer {
  status: number
  body?: unknown
  headers?: Record<string, string>
  delayMs?: number
}

/** The Graph API's error body. */
export const graphError = (
  code: number,
  message: string,
  status = 400,
  details?: string,
): ScriptedAnswer => ({
  status,
  body: {
    error: {
      message,
      type: 'OAuthException',
      code,
      ...(details === undefined ? {} : { error_data: { messaging_product: 'whatsapp', details } }),
      error_subcode: 2494010,
      fbtrace_id: 'AbCdEf123',
    },
  },
})
