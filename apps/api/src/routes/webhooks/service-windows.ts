import type { InboundMessage } from '@dispatch/db'
import { SERVICE_WINDOW_MS, SERVICE_WINDOW_RECORD_SCRIPT, serviceWindowKey } from '@dispatch/runtime'
import { evalLuaScript } from '@dispatch/runtime/lua-scripts'
import type { FastifyBaseLogger } from 'fastify'
import type { ApiDeps } from '../../deps.ts'

/**
 * Copies each reply's time into Redis, where sends under a sender's `enforce` policy read the
 * recipient's window without Postgres (Postgres' `conversation_windows`, written with the reply,
 * stays the record a worker rebuilds the copy from). Best effort: the webhook answers 200 whatever
 * Redis says, and a window missing from the copy only closes it early for the checks of `enforce`.
 */
export async function openServiceWindows(
  deps: Pick<ApiDeps, 'redis' | 'config'>,
  log: FastifyBaseLogger,
  replies: InboundMessage[],
  now: Date,
): Promise<void> {
  if (replies.length === 0) return
  try {
    await Promise.all(
      replies.flatMap((reply) => {
        const at = reply.receivedAt.getTime()
        return [reply.phone, reply.userId].flatMap((recipient) =>
          recipient === null
            ? []
            : [
                evalLuaScript(
                  deps.redis,
                  SERVICE_WINDOW_RECORD_SCRIPT,
                  serviceWindowKey(deps.config.QUEUE_PREFIX, reply.phoneNumberId, recipient),
                  at,
                  at + SERVICE_WINDOW_MS,
                  now.getTime(),
                ),
              ],
        )
      }),
    )
  } catch (error) {
    log.warn({ err: error, replies: replies.length }, 'service windows not copied to Redis')
  }
}
