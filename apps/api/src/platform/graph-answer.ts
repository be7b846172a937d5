/** A Graph API answer's body as an object; `{}` when it is not JSON or not an object. */
export function parseJson(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text)
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

/** The Graph error in a failed answer: its code and message, when it has them. */
export function graphErrorOf(answer: Record<string, unknown>) {
  const graph = (answer.error ?? {}) as { code?: unknown; message?: unknown }
  return {
    code: Number.isInteger(graph.code) ? (graph.code as number) : undefined,
    message: String(graph.message ?? ''),
  }
}
