import { QueueList, QueueNameParams, QueueSwitchBody, QueueView } from '@dispatch/contracts'
import { setQueueControl } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError, unavailable } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { OPTIONAL_BODY } from '../../plugins/openapi.ts'
import { publishSenderChange } from '../../sender-changes.ts'

const security = [{ adminToken: [] }]
const tags = ['admin']
const notFound = (name: string) =>
  new AppError(
    'NOT_FOUND',
    `No queue named ${JSON.stringify(name)}: use messages, messages.<senderId> (messages.default for the default sender), email or webhooks`,
  )

/**
 * The incident switches: pause and resume message delivery (all of it, or one sender's), e-mail
 * and webhooks, on every worker, each change audited with the admin as actor. Accepting goes on.
 */
export const adminQueueRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, clock } = app.deps
  const switchboard = app.queueSwitchboard

  app.get(
    '/',
    {
      schema: {
        operationId: 'listQueues',
        tags,
        summary: 'Every queue switch: paused or not, by whom, and its job counts',
        security,
        response: { 200: QueueList, ...errorResponses('SERVICE_UNAVAILABLE') },
      },
    },
    async (request) => {
      try {
        return { data: await switchboard.list() }
      } catch (error) {
        request.log.error({ err: error }, 'queue counts not read')
        throw unavailable('read the queues')
      }
    },
  )

  for (const action of ['pause', 'resume'] as const) {
    app.post(
      `/:name/${action}`,
      {
        preValidation: async (request) => {
          request.body ??= {}
        },
        schema: {
          [OPTIONAL_BODY]: true,
          operationId: `${action}Queue`,
          tags,
          summary:
            action === 'pause'
              ? 'Pause a queue on every worker (accepting goes on; messages stay queued)'
              : 'Resume a paused queue on every worker',
          description:
            '`messages`: all message delivery; `messages.<senderId>`: one sender’s (`messages.default`: the ' +
            'default sender’s); `email`; `webhooks`. Audited with the admin as actor; switching a queue to the ' +
            'position it is in answers it as it is and records nothing.',
          security,
          params: QueueNameParams,
          body: QueueSwitchBody,
          response: {
            200: QueueView,
            ...errorResponses('NOT_FOUND', 'VALIDATION_ERROR', 'SERVICE_UNAVAILABLE'),
          },
        },
      },
      async (request) => {
        const { name } = request.params
        const target = await switchboard.resolve(name)
        if (!target) throw notFound(name)
        const paused = action === 'pause'
        if (target.kind === 'email' || target.kind === 'webhooks') {
          // BullMQ's own pause holds for every worker; it goes first, so no record says what is not so.
          try {
            await switchboard.withQueue(target.kind, (queue) => (paused ? queue.pause() : queue.resume()))
          } catch (error) {
            request.log.error({ err: error, queue: name }, `queue ${action} failed`)
            throw unavailable(`${action} the ${name} queue`)
          }
        }
        const { changed } = await setQueueControl(db, {
          name,
          paused,
          actor: request.adminName,
          reason: request.body.reason ?? null,
          now: clock(),
        })
        if (changed) {
          request.log.info(
            { queue: name, actor: request.adminName, reason: request.body.reason },
            `queue ${action}d`,
          )
        }
        // Workers re-read the switches with the senders at once (and every SENDER_REFRESH_MS anyway).
        await publishSenderChange(app.deps, request.log, name)
        try {
          return await switchboard.view(target)
        } catch {
          // The switch is set; only its counts could not be read.
          throw unavailable('read the queue after switching it')
        }
      },
    )
  }
}
