/**
 * A webhooks worker in a process of its own, so a test can kill it with SIGKILL. Its settings come
 * as JSON in WEBHOOKS_WORLD; it says `ready` on stdout once it runs.
 */
import { startWorldWorker, type WorldSettings } from './webhooks-world.ts'

const settings = JSON.parse(process.env.WEBHOOKS_WORLD ?? '') as WorldSettings
const running = startWorldWorker(settings)
await running.worker.waitUntilReady()
process.stdout.write('ready\n')
process.on('SIGTERM', () => void running.close().then(() => process.exit(0)))
