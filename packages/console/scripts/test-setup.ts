import { ensureConsoleBuilt } from './ensure-built.ts'

/** Vitest global setup: the browser tests and the size test read the built console. */
export default function setup() {
  ensureConsoleBuilt()
}
