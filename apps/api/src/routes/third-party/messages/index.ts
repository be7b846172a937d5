import type { FastifyInstance } from 'fastify'
import { batchMessageRoutes } from './batch.ts'
import { cancelMessageRoutes } from './cancel.ts'
import { messageListRoutes } from './list.ts'
import { markReadRoutes } from './read.ts'
import { type MessageRouteOptions, sendMessageRoutes } from './send.ts'
import { messageStatusRoutes } from './status.ts'
import { messageTimelineRoutes } from './timeline.ts'
import { validateMessageRoutes } from './validate.ts'

/**
 * `…/messages`: sends, batches, validation, status, cancel, list, read receipts, timelines. Mounted
 * under /api/third-party and, as the spec's usage example has it, /third-party (`hide`: out of the
 * OpenAPI document, whose operationIds must be unique); the mount declares the authentication.
 */
export async function messageRoutes(app: FastifyInstance, options: MessageRouteOptions) {
  const { hide = false } = options
  for (const routes of [
    sendMessageRoutes,
    batchMessageRoutes,
    validateMessageRoutes,
    messageStatusRoutes,
    cancelMessageRoutes,
    messageListRoutes,
    markReadRoutes,
    messageTimelineRoutes,
  ]) {
    await app.register(routes, { hide })
  }
}
