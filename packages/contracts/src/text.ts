/**
 * Text Postgres can store and the platform can deliver: no NUL, no unpaired UTF-16 surrogate.
 * The API refuses anything else from its clients (400, naming the field).
 */
export const isStorableText = (text: string) => text.isWellFormed() && !text.includes('\u0000')

/**
 * What the messaging platform sends us (webhooks, answers), made storable: each NUL and each
 * unpaired surrogate becomes U+FFFD, the replacement character. Platform input is stored, not refused.
 */
export const toStorableText = (text: string) => text.toWellFormed().replaceAll('\u0000', '\uFFFD')
