import type { Kit, Order, OrderItem } from '@dispatch/contracts'
import { asc, inArray, sql } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import { channels } from '../schema/channels.ts'
import { discountCodes } from '../schema/discount-codes.ts'
import { type KitRow, kits } from '../schema/kits.ts'
import { orderItems } from '../schema/order-items.ts'
import type { OrderRow } from '../schema/orders.ts'
import { products } from '../schema/products.ts'
import { projects } from '../schema/projects.ts'
import { toChannel, toProduct, toProject } from './catalog-views.ts'
import type { Executor } from './executor.ts'

/** `column = any($1)`: one array parameter, so the statement text (and its plan) is the same for any page size. */
const anyOf = (column: AnyPgColumn, ids: string[]) => sql`${column} = any(${sql.param(ids)}::uuid[])`

const byId = <T extends { id: string }>(rows: T[]) => new Map(rows.map((r) => [r.id, r]))
const unique = (values: string[]) => [...new Set(values)]

/**
 * Turns order rows into full Orders (`chanel`, `project`, `orderItems` with `product` and
 * `kitSerials`, `discountCodes`) with one query per related table, whatever the page size.
 */
export async function assembleOrders(db: Executor, rows: OrderRow[]): Promise<Order[]> {
  if (rows.length === 0) return []
  const orderIds = rows.map((r) => r.id)
  const [items, codes, kitRows, channelRows, projectRows, productRows] = await Promise.all([
    db.select().from(orderItems).where(anyOf(orderItems.orderId, orderIds)).orderBy(asc(orderItems.id)),
    db
      .select()
      .from(discountCodes)
      .where(anyOf(discountCodes.orderId, orderIds))
      .orderBy(asc(discountCodes.id)),
    db
      .select({ orderItemId: kits.orderItemId, serial: kits.serial })
      .from(kits)
      .where(anyOf(kits.orderId, orderIds))
      .orderBy(asc(kits.serial)),
    db
      .select()
      .from(channels)
      .where(anyOf(channels.id, unique(rows.map((r) => r.channelId)))),
    db
      .select()
      .from(projects)
      .where(anyOf(projects.id, unique(rows.map((r) => r.projectId)))),
    // Products through a subquery, so they load alongside the items rather than after them.
    db
      .select()
      .from(products)
      .where(
        inArray(
          products.id,
          db
            .selectDistinct({ id: orderItems.productId })
            .from(orderItems)
            .where(anyOf(orderItems.orderId, orderIds)),
        ),
      ),
  ])
  const productsById = byId(productRows)
  const channelsById = byId(channelRows)
  const projectsById = byId(projectRows)
  const serials = new Map<string, string[]>()
  for (const k of kitRows) serials.set(k.orderItemId, [...(serials.get(k.orderItemId) ?? []), k.serial])
  const itemsByOrder = new Map<string, OrderItem[]>()
  for (const i of items) {
    const product = productsById.get(i.productId)
    if (!product) throw new Error(`order item ${i.id} names a missing product`)
    const item: OrderItem = {
      id: i.id,
      orderId: i.orderId,
      productId: i.productId,
      quantity: i.quantity,
      price: i.price,
      metadata: i.metadata,
      kitSerials: serials.get(i.id) ?? [],
      discountAllocations: i.discountAllocations,
      product: toProduct(product),
    }
    itemsByOrder.set(i.orderId, [...(itemsByOrder.get(i.orderId) ?? []), item])
  }
  return rows.map((r) => {
    const channel = channelsById.get(r.channelId)
    const project = projectsById.get(r.projectId)
    if (!channel || !project) throw new Error(`order ${r.id} names a missing channel or project`)
    return {
      id: r.id,
      userId: r.userId,
      tenantId: r.tenantId,
      channelId: r.channelId,
      addressId: r.addressId === null ? null : String(r.addressId),
      projectId: r.projectId,
      orderedAt: r.orderedAt,
      orderStatus: r.orderStatus,
      paymentStatus: r.paymentStatus,
      total: r.total,
      trackingNumber: r.trackingNumber,
      displayId: r.displayId,
      notPrintOut: r.notPrintOut,
      unregisterOrder: r.unregisterOrder,
      unregisterEmailAddress: r.unregisterEmailAddress,
      actualBiomeOrderId: r.actualBiomeOrderId,
      discountCodes: codes
        .filter((c) => c.orderId === r.id)
        .map((c) => ({ code: c.code, amount: c.amount, type: c.type })),
      totalDiscounts: r.totalDiscounts,
      notes: r.notes,
      isSolvedNotes: r.isSolvedNotes,
      idTrackingSpecialOrder: r.idTrackingSpecialOrder,
      invoiceNo: r.invoiceNo,
      partnerName: r.partnerName,
      chanel: toChannel(channel),
      project: toProject(project),
      orderItems: itemsByOrder.get(r.id) ?? [],
    }
  })
}

export const toKit = (r: KitRow): Kit => ({
  id: r.id,
  profileId: r.profileId,
  b2dProfileName: r.b2dProfileName,
  b2dProfileNameData: r.b2dProfileNameData,
  orderItemId: r.orderItemId,
  projectId: r.projectId,
  serial: r.serial,
  analysisId: r.analysisId,
  labId: r.labId,
  externalId: r.externalId,
  tenantId: r.tenantId,
  activated: r.activated,
  isUnassigned: r.isUnassigned,
  isSurveyFinished: r.isSurveyFinished,
  kronaReportReady: r.kronaReportReady,
  b2cScoreReady: r.b2cScoreReady,
  abunScoreReady: r.abunScoreReady,
  top10BacteriaReportReady: r.top10BacteriaReportReady,
  kitSendOut: r.kitSendOut,
  pdfPublish: r.pdfPublish,
  isAliquoted: r.isAliquoted,
  activatedAt: r.activatedAt,
  sampleReceivedAt: r.sampleReceivedAt,
  kitSendOutAt: r.kitSendOutAt,
  completedAt: r.completedAt,
  kitReceivedAt: r.kitReceivedAt,
  surveyStartAt: r.surveyStartAt,
  status: r.status,
  notes: r.notes,
  internalSurveyResultId: r.internalSurveyResultId,
  isFfqSurveyCompletion: r.isFfqSurveyCompletion,
  pdfPath: r.pdfPath,
  surveyToolResponseId: r.surveyToolResponseId,
  pdfQC: r.pdfQc,
  reportStatus: r.reportStatus,
})
