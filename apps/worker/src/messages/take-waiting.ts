import { join } from 'node:path'
import type { MessageJob } from '@dispatch/contracts'
import { evalLuaScript, luaScripts } from '@dispatch/runtime/lua-scripts'
import type { fairKeys } from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'

/**
 * Takes one message still waiting in its sender's fair-admission lists into `moving`, as the admit
 * script does, so exactly one of them gets it (lua/takeWaitingMessage-4.lua).
 */
const TAKE_WAITING_SCRIPT = luaScripts(join(import.meta.dirname, 'lua'), [
  'takeWaitingMessage',
]).takeWaitingMessage

/**
 * Takes the message `messageId` waiting on a sender (`keys`) into its `moving`, gives it to `use`,
 * and only once `use` has ended takes it out of `moving`: a lookup meanwhile finds it there, and a
 * process killed in between leaves it there to be admitted again. False when the message was
 * admitted or taken meanwhile (nothing given to `use`).
 */
export async function takeWaiting(
  redis: RedisClient,
  keys: ReturnType<typeof fairKeys>,
  messageId: string,
  use: (job: MessageJob) => Promise<void>,
): Promise<boolean> {
  const json = (await evalLuaScript(
    redis,
    TAKE_WAITING_SCRIPT,
    keys.jobs,
    keys.scheduled,
    keys.moving,
    keys.movingAt,
    messageId,
    Date.now(),
  )) as string | null
  if (json === null) return false
  await use(JSON.parse(json) as MessageJob)
  await redis.multi().hdel(keys.moving, messageId).zrem(keys.movingAt, messageId).exec()
  return true
}
