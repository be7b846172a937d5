/**
 * Webhooks Meta sends about an account rather than a message, as the Cloud API's webhook reference
 * shows them: one entry per WhatsApp Business Account (`entry[].id` is the WABA id), one change of
 * the given field. Used by the tests and by the fake's CLI.
 */
export const accountWebhook = (wabaId: string, field: string, value: Record<string, unknown>) => ({
  object: 'whatsapp_business_account',
  entry: [{ id: wabaId, time: Math.floor(Date.now() / 1000), changes: [{ field, value }] }],
})

/** `message_template_status_update`: `event` is the new status (APPROVED, REJECTED, PAUSED, …). */
export const templateStatusWebhook = (
  wabaId: string,
  template: { id: string; name: string; language: string; event: string; reason?: string; category?: string },
) =>
  accountWebhook(wabaId, 'message_template_status_update', {
    event: template.event,
    // Meta sends the id as a JSON number.
    message_template_id: Number(template.id),
    message_template_name: template.name,
    message_template_language: template.language,
    reason: template.reason ?? 'NONE',
    ...(template.category ? { message_template_category: template.category } : {}),
  })

/** `message_template_quality_update`: GREEN, YELLOW, RED (or UNKNOWN). */
export const templateQualityWebhook = (
  wabaId: string,
  template: { id: string; name: string; language: string; previous: string; next: string },
) =>
  accountWebhook(wabaId, 'message_template_quality_update', {
    previous_quality_score: template.previous,
    new_quality_score: template.next,
    message_template_id: Number(template.id),
    message_template_name: template.name,
    message_template_language: template.language,
  })

/** `template_category_update`: Meta moved a template to another category. */
export const templateCategoryWebhook = (
  wabaId: string,
  template: { id: string; name: string; language: string; previous: string; next: string },
) =>
  accountWebhook(wabaId, 'template_category_update', {
    message_template_id: Number(template.id),
    message_template_name: template.name,
    message_template_language: template.language,
    previous_category: template.previous,
    new_category: template.next,
  })
