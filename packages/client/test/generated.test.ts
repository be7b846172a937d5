import { readFile } from 'node:fs/promises'
import { expect, it } from 'vitest'
import { buildDocument, DOCUMENT_FILE, renderSchema, SCHEMA_FILE } from '../scripts/openapi.ts'

it('the committed openapi.json and src/schema.ts are what the API generates now (else run pnpm client:generate)', async () => {
  const document = await buildDocument()
  expect(await readFile(DOCUMENT_FILE, 'utf8')).toBe(document)
  expect(await readFile(SCHEMA_FILE, 'utf8')).toBe(await renderSchema(document))
})
