import { listSuppressionsAfter } from '@dispatch/db'
import {
  announceOptOut,
  OPT_OUT_NUMBER_SCRIPT,
  OPT_OUT_WRITE_SCRIPT,
  OPT_OUTS_RESET,
  optOutNumbersKey,
  recipientHasher,
  suppressionKey,
  suppressionsLoadedKey,
} from '@dispatch/runtime'
import { scriptCall } from '@dispatch/runtime/lua-scripts'
import type { WorkerContext } from '../runtime.ts'
import { RedisCopyRebuild } from './redis-copy/rebuild.ts'

const PAGE = 5000

/**
 * The Redis copy of the suppression list, kept complete: every entry Postgres holds is copied back
 * when the marker is missing (see RedisCopyRebuild), checked as often as the windows' copy.
 */
export function suppressionRebuild(context: WorkerContext): RedisCopyRebuild {
  const { db, config } = context
  const prefix = config.QUEUE_PREFIX
  const hash = recipientHasher(config)
  return new RedisCopyRebuild(
    context,
    {
      name: 'suppressions',
      marker: suppressionsLoadedKey(prefix),
      lock: `${prefix}:optout:rebuild-lock`,
      async copy(redis) {
        const write = scriptCall(redis, OPT_OUT_WRITE_SCRIPT)
        const list = scriptCall(redis, OPT_OUT_NUMBER_SCRIPT)
        let copied = 0
        let after: string | undefined
        for (;;) {
          const page = await listSuppressionsAfter(db, after, PAGE)
          if (page.length === 0) break
          await Promise.all(
            // Each entry into its number and recipient's value, beside the other owners' there, and
            // its number into the recipient's list (what a pooled send reads first).
            page.flatMap((s) => {
              const hashed = hash(s.recipient)
              return [
                list(optOutNumbersKey(prefix, hashed), s.phoneNumberId),
                write(suppressionKey(prefix, s.phoneNumberId, hashed), s.owner, s.scope),
              ]
            }),
          )
          copied += page.length
          after = page.at(-1)?.id
          if (page.length < PAGE) break
        }
        // Entries back that no worker heard announced: every delivery of a message accepted before
        // now reads its recipient's (consent/watch.ts).
        await announceOptOut(redis, prefix, OPT_OUTS_RESET)
        return copied
      },
    },
    config.SERVICE_WINDOW_CHECK_MS,
  )
}
