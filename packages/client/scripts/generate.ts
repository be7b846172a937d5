/**
 * Regenerates the client from the API: writes openapi.json and src/schema.ts.
 *
 *   pnpm client:generate   (or pnpm --filter @dispatch/client generate)
 *
 * Builds the API in process with the environment's configuration (the local defaults suffice: it
 * connects to Postgres and Redis but sends them nothing) and closes it again.
 */
import { writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { buildDocument, DOCUMENT_FILE, renderSchema, SCHEMA_FILE } from './openapi.ts'

const document = await buildDocument()
await writeFile(DOCUMENT_FILE, document)
await writeFile(SCHEMA_FILE, await renderSchema(document))
console.log(`wrote ${fileURLToPath(DOCUMENT_FILE)} and ${fileURLToPath(SCHEMA_FILE)}`)
