export type OrderRejectionCode =
  | 'VALIDATION_ERROR'
  | 'INVALID_REFERENCE'
  | 'OUT_OF_STOCK'
  | 'KIT_SERIAL_TAKEN'

/** A rule the order breaks: the transaction rolls back and the caller answers with `code`. */
export class OrderRejected extends Error {
  readonly code: OrderRejectionCode
  constructor(code: OrderRejectionCode, message: string) {
    super(message)
    this.code = code
  }
}
