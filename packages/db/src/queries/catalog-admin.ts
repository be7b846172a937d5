import type {
  CreateChannelBody,
  CreateProductBody,
  CreateProjectBody,
  UpdateChannelBody,
  UpdateProductBody,
  UpdateProjectBody,
} from '@dispatch/contracts'
import { and, eq, isNull } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { addresses } from '../schema/addresses.ts'
import { channels } from '../schema/channels.ts'
import { products } from '../schema/products.ts'
import { projects } from '../schema/projects.ts'
import { toChannel, toProduct, toProject } from './catalog-views.ts'
import { isUuid } from './orders.ts'

/** A body field that names something missing: the admin route answers 422 INVALID_REFERENCE. */
export class InvalidReference extends Error {}

/** Wire names to column names where the spec's spelling differs from ours. */
const channelValues = ({ sendBMEEmail, ...rest }: UpdateChannelBody) => ({
  ...rest,
  ...(sendBMEEmail === undefined ? {} : { sendBmeEmail: sendBMEEmail }),
})
const projectValues = ({
  vendorPIC,
  isPartnerEmailD2D31Trigger,
  inputMLPrefix,
  outputMLPrefix,
  ...rest
}: UpdateProjectBody) => {
  const renamed = {
    vendorPic: vendorPIC,
    isPartnerEmailD2d31Trigger: isPartnerEmailD2D31Trigger,
    inputMlPrefix: inputMLPrefix,
    outputMlPrefix: outputMLPrefix,
  }
  // The body was validated against the contracts schema, whose enums are the columns' enums.
  return {
    ...rest,
    ...Object.fromEntries(Object.entries(renamed).filter(([, v]) => v !== undefined)),
  } as Partial<typeof projects.$inferInsert>
}

async function liveChannel(db: Db, id: string | undefined) {
  if (id === undefined) return
  const [row] = isUuid(id)
    ? await db
        .select({ id: channels.id })
        .from(channels)
        .where(and(eq(channels.id, id), isNull(channels.deletedAt)))
    : []
  if (!row) throw new InvalidReference(`channelId ${JSON.stringify(id)} does not exist`)
}

async function tenantAddress(db: Db, tenantId: string, id: number | null | undefined) {
  if (id === undefined || id === null) return
  const [row] = await db
    .select({ id: addresses.id })
    .from(addresses)
    .where(and(eq(addresses.id, id), eq(addresses.tenantId, tenantId)))
  if (!row) throw new InvalidReference(`addressId ${id} does not exist for tenant ${tenantId}`)
}

export async function createChannel(db: Db, body: CreateChannelBody) {
  const [row] = await db
    .insert(channels)
    .values(channelValues(body) as CreateChannelBody)
    .returning()
  return row && toChannel(row)
}

export async function updateChannel(db: Db, id: string, body: UpdateChannelBody, now: Date) {
  if (!isUuid(id)) return undefined
  const [row] = await db
    .update(channels)
    .set({ ...channelValues(body), updatedAt: now })
    .where(and(eq(channels.id, id), isNull(channels.deletedAt)))
    .returning()
  return row && toChannel(row)
}

export async function createProject(db: Db, body: CreateProjectBody) {
  await liveChannel(db, body.channelId)
  await tenantAddress(db, body.tenantId, body.addressId)
  const values = {
    ...projectValues(body),
    tenantId: body.tenantId,
    channelId: body.channelId,
    name: body.name,
  }
  const [row] = await db.insert(projects).values(values).returning()
  return row && toProject(row)
}

export async function updateProject(db: Db, id: string, body: UpdateProjectBody, now: Date) {
  if (!isUuid(id)) return undefined
  const [current] = await db
    .select({ tenantId: projects.tenantId })
    .from(projects)
    .where(and(eq(projects.id, id), isNull(projects.deletedAt)))
  if (!current) return undefined
  await liveChannel(db, body.channelId)
  await tenantAddress(db, current.tenantId, body.addressId)
  const [row] = await db
    .update(projects)
    .set({ ...projectValues(body), updatedAt: now })
    .where(and(eq(projects.id, id), isNull(projects.deletedAt)))
    .returning()
  return row && toProject(row)
}

export async function createProduct(db: Db, body: CreateProductBody) {
  await liveChannel(db, body.channelId)
  const [row] = await db.insert(products).values(body).returning()
  return row && toProduct(row)
}

export async function updateProduct(db: Db, id: string, body: UpdateProductBody, now: Date) {
  if (!isUuid(id)) return undefined
  await liveChannel(db, body.channelId)
  const [row] = await db
    .update(products)
    .set({ ...body, updatedAt: now })
    .where(and(eq(products.id, id), isNull(products.deletedAt)))
    .returning()
  return row && toProduct(row)
}

const catalogTables = { channels, projects, products } as const
export type CatalogTable = keyof typeof catalogTables

/** Soft delete: the record disappears from lists (but `deleted=true`) and from new orders. */
export async function softDeleteCatalogRecord(db: Db, table: CatalogTable, id: string, now: Date) {
  if (!isUuid(id)) return false
  const t = catalogTables[table]
  const rows = await db
    .update(t)
    .set({ deletedAt: now, updatedAt: now })
    .where(and(eq(t.id, id), isNull(t.deletedAt)))
    .returning({ id: t.id })
  return rows.length > 0
}
