import { MessageJob } from '@dispatch/contracts'
import Type, { type Static } from 'typebox'

/**
 * Several messages of one sender delivered by one job (docs/delivery.md, "Bundles"): the admitter
 * makes them when `MESSAGES_BUNDLE_SIZE` is above 1, so BullMQ's fetch and completion are paid once
 * for many messages. Each message keeps its own claim (message-claims.ts), held in the bundle's name:
 * the claim's value is the bundle's job id. A message that must be tried again later leaves the
 * bundle as a job of its own (its id the message's, `claimedBy` the bundle's).
 */
export const MESSAGE_BUNDLE_MAX = 100
export const MESSAGE_BUNDLE_JOB_NAME = 'bundle'

export const MessageBundleJob = Type.Object(
  { messages: Type.Array(MessageJob, { minItems: 1, maxItems: MESSAGE_BUNDLE_MAX }) },
  { additionalProperties: false },
)
export type MessageBundleJob = Static<typeof MessageBundleJob>

/** A bundle's job id: its messages', hashed by the caller (an admission run again makes the same id). */
export const messageBundleJobId = (digest: string) => `bundle-${digest}`
export const isMessageBundleJobId = (id: string | undefined) => id?.startsWith('bundle-') === true

/**
 * What a bundle's job ends with: nothing. Each message's outcome is recorded (Postgres, or the
 * sender's sent log), and a finished bundle is removed as it ends.
 */
export type MessageBundleResult = Record<string, never>
