/**
 * The hand-off between the API and the worker: everything both sides must agree on to pass a
 * message through Redis, imported by both, so following a message is following these imports.
 *
 * The path a message takes through it:
 * 1. The API accepts a send and stores its `MessageJob` (@dispatch/contracts) in its sender's fair
 *    queue (`fairKeys`: the `jobs` hash, a list per priority and key, the ring), all in one
 *    fairEnqueue call (apps/api/src/sending/message-store.ts); a scheduled one waits in `scheduled`.
 * 2. A worker's admitter takes about one window of the sender's rate at a time, one message per key
 *    round the ring (fairAdmit, apps/worker/src/messages/admitter.ts), and adds each to the sender's BullMQ queue as a job
 *    (MESSAGE_JOB_OPTIONS), or several as one bundle (`MessageBundleJob`, message-bundles.ts).
 * 3. The worker taking a job claims its message (`messageClaimKey`), racing its sender's or an
 *    admin's cancel (apps/api/src/sending/cancel-claim.ts) for the same key; the winner alone goes on
 *    to the platform (apps/worker/src/messages/deliver.ts).
 * 4. A `sent` outcome waits in the sender's `sentLog` stream until the worker writes it to Postgres.
 */
export * from './fair-queue.ts'
export * from './job-options.ts'
export * from './message-bundles.ts'
export * from './message-claims.ts'
