/** The OpenAPI security of a key route. */
export const security = [{ apiKey: [] }]
