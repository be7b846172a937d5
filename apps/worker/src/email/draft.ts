/** An e-mail before rendering: what each template writes (templates.ts, order-templates.ts). */
export interface Draft {
  subject: string
  /** Paragraphs of plain text; the HTML part is made from the same words, escaped. */
  paragraphs: string[]
}
