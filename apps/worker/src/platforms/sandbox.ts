import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Delivered, type MessagingPlatform, PlatformError } from './types.ts'

/**
 * Delivers to nowhere: every message is "sent" with a generated platform id. Latency and a failure
 * rate (retryable failures) can be set, for demos, load tests and benchmarks.
 */
export function createSandboxPlatform(options: {
  latencyMs: number
  failureRate: number
  phoneNumberId: string
}): MessagingPlatform {
  return {
    name: 'sandbox',
    phoneNumberId: options.phoneNumberId,
    async deliver(): Promise<Delivered> {
      if (options.latencyMs > 0) await sleep(options.latencyMs)
      if (options.failureRate > 0 && Math.random() < options.failureRate) {
        throw new PlatformError(
          'SANDBOX_FAILURE',
          'retryable',
          'Simulated platform failure (SANDBOX_FAILURE_RATE)',
        )
      }
      return { platformMessageId: `wamid.sandbox.${randomUUID()}` }
    },
  }
}
