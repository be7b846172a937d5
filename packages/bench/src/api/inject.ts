/**
 * Sends through an API built in this process (`app.inject`), and the CPU they cost: the benchmarks
 * that compare two builds of the app without a network in between.
 */
import { randomUUID } from 'node:crypto'
import { createSenderPool, senders } from '@dispatch/db'
import { suppressionsLoadedKey } from '@dispatch/runtime'
import type { FastifyInstance } from 'fastify'

/** Requests a key with every send scope (or `scopes`) and approves it, through the API itself. */
export async function approvedKey(
  app: FastifyInstance,
  scopes = ['send:free-text', 'send:template', 'send:image'],
): Promise<string> {
  return (await approvedKeyWithId(app, scopes)).key
}

async function approvedKeyWithId(
  app: FastifyInstance,
  scopes = ['send:free-text', 'send:template', 'send:image'],
): Promise<{ id: string; key: string }> {
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
  return { id, key }
}

/**
 * An approved key bound to a sender pool of three numbers of one business (weights 1, 1, 2), as
 * an admin would set it up (docs/sender-pools.md): for the pooled variant of the accept benchmark.
 * Waits until the API holds the pool.
 */
export async function pooledKey(app: FastifyInstance): Promise<string> {
  return (await pooledKeys(app)).pooled
}

/**
 * `pooledKey`'s key, and beside it a key bound to the pool's first number alone (no pool): the two
 * differ by the pool only, for comparing their sends; and a key bound to a pool of that number
 * alone (`pooledOne`): against the number alone, the sticky lookup and the choice only.
 */
export async function pooledKeys(
  app: FastifyInstance,
): Promise<{ pooled: string; single: string; pooledOne: string }> {
  const { db } = app.deps
  const tag = `${Date.now()}`.slice(-9)
  const ids = [0, 1, 2].map(() => randomUUID())
  await db.insert(senders).values(
    ids.map((id, n) => ({
      id,
      phoneNumberId: `9${tag}${n}`,
      displayName: `Bench pool number ${n}`,
      businessId: `8${tag}`,
      wabaId: `7${tag}`,
    })),
  )
  const pool = async (name: string, members: Array<{ senderId: string; weight: number }>) => {
    const created = await createSenderPool(db, { name, members, actor: 'bench', now: new Date() })
    if (!('outcome' in created) || created.outcome !== 'written') {
      throw new Error(`pool not created: ${JSON.stringify(created)}`)
    }
    return created.detail.pool.id
  }
  /** A new approved key, bound as an admin binds it (its pool, or its sender). */
  const keyBound = async (payload: { senderPoolId: string } | { senderId: string }) => {
    const { id, key } = await approvedKeyWithId(app)
    const bound = await app.inject({
      method: 'PATCH',
      url: `/api/admin/api-keys/${id}`,
      headers: { authorization: `Bearer ${app.deps.config.adminTokens[0]?.token}` },
      payload,
    })
    if (bound.statusCode !== 200) throw new Error(`binding failed: ${bound.body}`)
    return key
  }
  const poolId = await pool(
    'Bench pool',
    ids.map((senderId, n) => ({ senderId, weight: n === 2 ? 2 : 1 })),
  )
  // A pool of the first number alone, beside it: its key's sends cost the sticky lookup and the
  // choice, and no other number's opt-outs (the pool has none).
  const aloneId = await pool('Bench pool of one', [{ senderId: ids[0] as string, weight: 1 }])
  const pooled = await keyBound({ senderPoolId: poolId })
  const pooledOne = await keyBound({ senderPoolId: aloneId })
  // The numbers' send rules too, so each send is checked as a known sender's (its consent read).
  await Promise.all([app.sending.pools.refresh(), app.sending.rules.refresh()])
  if (!app.sending.pools.get(poolId)) throw new Error('the API did not load the pool')
  // The suppression copy whole, as a worker's rebuild leaves it in every deployment: a pooled send
  // reads its recipient's list of numbers, not each member's entry (docs/consent.md).
  await app.deps.redis.set(suppressionsLoadedKey(app.deps.config.QUEUE_PREFIX), new Date().toISOString())
  const single = await keyBound({ senderId: ids[0] as string })
  return { pooled, single, pooledOne }
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
