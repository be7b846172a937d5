import { listOpenWindows } from '@dispatch/db'
import {
  SERVICE_WINDOW_MS,
  SERVICE_WINDOW_RECORD_SCRIPT,
  serviceWindowKey,
  serviceWindowsLoadedKey,
} from '@dispatch/runtime'
import { evalLuaScript } from '@dispatch/runtime/lua-scripts'
import type { WorkerContext } from '../runtime.ts'
import { RedisCopyRebuild } from './redis-copy/rebuild.ts'

const PAGE = 1000

/**
 * The Redis copy of the 24-hour windows, kept complete: without it a send checked under `enforce`
 * would find every window closed, so while its marker is missing windows read as unknown (the
 * platform decides) until a worker copies every window Postgres has open (see RedisCopyRebuild).
 */
export function serviceWindowRebuild(context: WorkerContext): RedisCopyRebuild {
  const { db, config } = context
  const prefix = config.QUEUE_PREFIX
  return new RedisCopyRebuild(
    context,
    {
      name: 'service windows',
      marker: serviceWindowsLoadedKey(prefix),
      lock: `${prefix}:window:rebuild-lock`,
      async copy(redis, now) {
        let copied = 0
        let after: { phoneNumberId: string; phone: string } | undefined
        const since = new Date(now.getTime() - SERVICE_WINDOW_MS)
        for (;;) {
          const page = await listOpenWindows(db, since, after, PAGE)
          if (page.length === 0) break
          await Promise.all(
            page.map((w) => {
              const at = w.lastInboundAt.getTime()
              return evalLuaScript(
                redis,
                SERVICE_WINDOW_RECORD_SCRIPT,
                serviceWindowKey(prefix, w.phoneNumberId, w.phone),
                at,
                at + SERVICE_WINDOW_MS,
                Date.now(),
              )
            }),
          )
          copied += page.length
          const last = page.at(-1) as { phoneNumberId: string; phone: string }
          after = { phoneNumberId: last.phoneNumberId, phone: last.phone }
          if (page.length < PAGE) break
        }
        return copied
      },
    },
    config.SERVICE_WINDOW_CHECK_MS,
  )
}
