import { createHash } from 'node:crypto'

/**
 * A bundle's job id: its endpoint and its events, so a batch relayed twice (a crash between the
 * enqueue and the commit) is still one job when it holds the same events.
 */
export const webhookBundleJobId = (endpointId: string, eventIds: string[]) =>
  `bundle-${endpointId}-${createHash('sha256').update(eventIds.join(',')).digest('hex').slice(0, 32)}`
