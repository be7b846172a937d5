/** Message `i`'s body as a batch item: texts, templates and images in turn, each to a phone of its own. */
export function messageItem(i: number) {
  const phone = `+5511${String(900_000_000 + i)}`
  if (i % 3 === 0) return { type: 'text' as const, phone, text: `Your code is ${i}` }
  if (i % 3 === 1) {
    return {
      type: 'template' as const,
      phone,
      templateId: 'order_shipped',
      language: 'pt_BR',
      variables: { '1': 'Ana', '2': `BR-${i}` },
    }
  }
  return { type: 'image' as const, phone, image: { mediaId: '1234567890', text: `Invoice ${i}` } }
}

/** A send through one API over HTTP; anything but a 202 throws, naming the answer. */
async function post(api: string, key: string, path: string, body: unknown) {
  const res = await fetch(`${api}/api/third-party/messages/${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const text = await res.text()
  if (res.status !== 202) throw new Error(`${path} through ${api} answered ${res.status}: ${text}`)
  return JSON.parse(text)
}

/**
 * Sends `batches × batchSize + singles` messages with one key, spread over the APIs in turn: each
 * batch followed by its share of single sends (send-text, send-template, send-image), `parallel`
 * requests at once. Every one must be accepted whole; answers the accepted message ids by API.
 */
export async function sendMessages(options: {
  apis: string[]
  key: string
  batches: number
  batchSize: number
  singles: number
  parallel: number
}): Promise<Map<string, string[]>> {
  const { apis, key, batches, batchSize, singles } = options
  const tasks: Array<() => Promise<{ api: string; ids: string[] }>> = []
  const perBatch = Math.ceil(singles / batches)
  const total = batches * batchSize + singles
  for (let b = 0; b < batches; b++) {
    const first = b * batchSize
    const api = apis[b % apis.length] as string
    tasks.push(async () => {
      const messages = Array.from({ length: batchSize }, (_, j) => messageItem(first + j))
      const answer = await post(api, key, 'batch', { messages })
      if (answer.accepted !== batchSize) {
        throw new Error(`a batch through ${api} accepted ${answer.accepted} of ${batchSize}`)
      }
      return { api, ids: answer.results.map((r: { messageId: string }) => r.messageId) }
    })
    for (let s = 0; s < perBatch; s++) {
      const i = batches * batchSize + b * perBatch + s
      if (i >= total) break
      const single = apis[i % apis.length] as string
      tasks.push(async () => {
        const { type, ...body } = messageItem(i)
        const answer = await post(single, key, `send-${type}`, body)
        return { api: single, ids: [answer.messageId as string] }
      })
    }
  }
  const byApi = new Map<string, string[]>(apis.map((api) => [api, []]))
  for (const { api, ids } of await inPool(tasks, options.parallel)) byApi.get(api)?.push(...ids)
  return byApi
}

/** Runs `tasks` with at most `limit` at once; rejects with the first failure. */
async function inPool<T>(tasks: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length)
  let next = 0
  const run = async () => {
    while (next < tasks.length) {
      const index = next++
      results[index] = await (tasks[index] as () => Promise<T>)()
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, run))
  return results
}
