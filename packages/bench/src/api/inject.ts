/**
 * Sends through an API built in this process (`app.inject`), and the CPU they cost: the benchmarks
 * that compare two builds of the app without a network in between.
 */
import type { FastifyInstance } from 'fastify'

/** Requests a key with every send scope (or `scopes`) and approves it, through the API itself. */
export async function approvedKey(
  app: FastifyInstance,
  scopes = ['send:free-text', 'send:template', 'send:image'],
): Promise<string> {
  const created = await app.inject({
    method: 'POST',
    url: '/api/api-keys/request',
    payload: {
      clientName: 'Bench',
      email: 'bench@dispatch.test',
      scopes,
    },
  })
  const { id, key } = created.json()
  const approved = await app.inject({
    method: 'POST',
    url: `/api/admin/api-keys/${id}/approve`,
    headers: { authorization: `Bearer ${app.deps.config.adminTokens[0]?.token}` },
  })
  if (approved.statusCode !== 200) throw new Error(`approve failed: ${approved.body}`)
  return key
}

/**
 * This process's CPU per request, µs, over `count` sends of `body` by `inject`, 50 in flight (`body`
 * a function: a body of its own per send, e.g. `numberedBodies`).
 */
export async function cpuPerInjectedSend(
  { app, key }: { app: FastifyInstance; key: string },
  body: string | (() => string),
  count: number,
  path = 'send-text',
): Promise<number> {
  const before = process.cpuUsage()
  let next = 0
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next++ < count) {
        const res = await app.inject({
          method: 'POST',
          url: `/api/third-party/messages/${path}`,
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          payload: typeof body === 'string' ? body : body(),
        })
        if (res.statusCode !== 202) throw new Error(`send answered ${res.statusCode}: ${res.body}`)
      }
    }),
  )
  const used = process.cpuUsage(before)
  return (used.user + used.system) / count
}

type InjectTarget = { app: FastifyInstance; key: string }

/**
 * CPU per send of two apps in this process, `pairs` pairs of `count` sends each, the order
 * alternating so drift falls on both alike; one unmeasured batch of each first, and `between` run
 * after each pair (to clear what the sends stored).
 */
export async function pairedCpuPerSend(
  apps: { on: InjectTarget; off: InjectTarget },
  options: {
    body: string | (() => string)
    count: number
    pairs: number
    between: () => Promise<unknown>
    path?: string
  },
): Promise<{ on: number[]; off: number[] }> {
  await cpuPerInjectedSend(apps.on, options.body, options.count, options.path)
  await cpuPerInjectedSend(apps.off, options.body, options.count, options.path)
  const cpu = { on: [] as number[], off: [] as number[] }
  for (let pair = 0; pair < options.pairs; pair++) {
    for (const side of pair % 2 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      cpu[side].push(await cpuPerInjectedSend(apps[side], options.body, options.count, options.path))
    }
    await options.between()
  }
  return cpu
}
