/**
 * The business portfolio a sender counts in, for WhatsApp's messaging limit and a sender pool's
 * "one business" rule (docs/sender-pools.md): its business id (an admin's), else its WhatsApp
 * Business Account (Meta keeps a WABA in one portfolio), else the sender alone. Here, not beside
 * the count in @dispatch/runtime, so the console offers a pool's members by the API's own rule.
 */
export function portfolioOf(sender: {
  id: string
  wabaId: string | null
  businessId: string | null
}): string {
  if (sender.businessId) return `business:${sender.businessId}`
  if (sender.wabaId) return `waba:${sender.wabaId}`
  return `sender:${sender.id}`
}
