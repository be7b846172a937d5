import type { ChannelListQuery, ProductListQuery, ProjectListQuery } from '@dispatch/contracts'
import { count, eq, exists, ilike, inArray, or, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { channels } from '../schema/channels.ts'
import { products } from '../schema/products.ts'
import { projects } from '../schema/projects.ts'
import { toChannel, toProduct, toProject } from './catalog-views.ts'
import { deletedFilter, likePattern, offsetOf, ordering, whereAll } from './list-helpers.ts'

/** Channels are shared; a tenant filter keeps those that tenant's projects use. */
export async function listChannels(db: Db, query: ChannelListQuery) {
  const where = whereAll([
    deletedFilter(channels.deletedAt, query.deleted),
    query.channelIds?.length ? inArray(channels.id, query.channelIds) : undefined,
    query.q ? ilike(channels.name, likePattern(query.q)) : undefined,
    query.tenantId
      ? exists(
          db
            .select({ one: sql`1` })
            .from(projects)
            .where(
              sql`${projects.channelId} = ${channels.id} and ${projects.tenantId} = ${query.tenantId} and ${projects.deletedAt} is null`,
            ),
        )
      : undefined,
  ])
  const column = query.orderField === 'name' ? channels.name : channels.createdAt
  const rows = await db
    .select()
    .from(channels)
    .where(where)
    .orderBy(...ordering(query.order, column, channels.id))
    .limit(query.take)
    .offset(offsetOf(query))
  return rows.map(toChannel)
}

const projectColumns = {
  createdAt: projects.createdAt,
  updatedAt: projects.updatedAt,
  name: projects.name,
  displayId: projects.displayId,
} as const

export async function listProjects(db: Db, tenantId: string, query: ProjectListQuery) {
  const pattern = query.q ? likePattern(query.q) : undefined
  const where = whereAll([
    eq(projects.tenantId, tenantId),
    deletedFilter(projects.deletedAt, query.deleted),
    query.channelIds?.length ? inArray(projects.channelId, query.channelIds) : undefined,
    pattern
      ? or(
          ilike(projects.name, pattern),
          ilike(projects.displayId, pattern),
          ilike(projects.organizationName, pattern),
        )
      : undefined,
  ])
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(projects)
      .where(where)
      .orderBy(...ordering(query.order, projectColumns[query.orderField], projects.id))
      .limit(query.take)
      .offset(offsetOf(query)),
    db.select({ value: count() }).from(projects).where(where),
  ])
  return { items: rows.map(toProject), itemCount: total?.value ?? 0 }
}

const productColumns = {
  createdAt: products.createdAt,
  updatedAt: products.updatedAt,
  name: products.name,
  displayId: products.displayId,
  price: products.price,
  stock: products.stock,
} as const

export async function listProducts(db: Db, tenantId: string, query: ProductListQuery) {
  const pattern = query.q ? likePattern(query.q) : undefined
  const where = whereAll([
    eq(products.tenantId, tenantId),
    deletedFilter(products.deletedAt, query.deleted),
    query.channelId ? eq(products.channelId, query.channelId) : undefined,
    query.productType?.length ? inArray(products.productType, query.productType) : undefined,
    pattern
      ? or(
          ilike(products.name, pattern),
          ilike(products.displayId, pattern),
          ilike(products.description, pattern),
        )
      : undefined,
  ])
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(products)
      .where(where)
      .orderBy(...ordering(query.order, productColumns[query.orderField], products.id))
      .limit(query.take)
      .offset(offsetOf(query)),
    db.select({ value: count() }).from(products).where(where),
  ])
  return { items: rows.map(toProduct), itemCount: total?.value ?? 0 }
}
