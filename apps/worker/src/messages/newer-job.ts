import type { TSchema } from 'typebox'
import { Value } from 'typebox/value'

/**
 * How long a job a newer version wrote waits before a worker takes it again: during a rolling
 * upgrade, until a newer worker does.
 */
export const NEWER_JOB_DELAY_MS = 30_000

/**
 * Whether a job that fails its contract would pass it without the fields this worker does not know:
 * written by a newer version (the API or a worker already upgraded added a field). Failing it would
 * lose a message the service accepted, so it is put back for a newer worker instead; a job wrong in
 * any other way still fails.
 */
export function fromNewerVersion(schema: TSchema, data: unknown): boolean {
  if (typeof data !== 'object' || data === null) return false
  return Value.Check(schema, Value.Clean(schema, structuredClone(data)))
}
