import Type, { type Static } from 'typebox'
import { ErrorBody } from './errors.ts'
import { BATCH_MAX_ITEMS } from './messages.ts'

/**
 * `POST /messages/validate`: one send with its `type` (`{type: "template", phone, templateId, …}`,
 * a batch item), or a batch (`{messages: [...]}`). Items are checked by the route, one by one, as a
 * real send or batch checks them.
 */
export const ValidateBody = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      'One send with its `type` ({type: "text" | "document" | …any send kind, ...that send\'s body}), or {messages: [...]} as a batch',
  },
)

/** One item's verdict: what a real send would have answered, without sending. */
export const ValidateItem = Type.Union([
  Type.Object(
    { index: Type.Integer({ minimum: 0 }), valid: Type.Literal(true) },
    { additionalProperties: false },
  ),
  Type.Object(
    { index: Type.Integer({ minimum: 0 }), valid: Type.Literal(false), error: ErrorBody },
    { additionalProperties: false },
  ),
])
export type ValidateItem = Static<typeof ValidateItem>

export const ValidateAnswer = Type.Union([
  Type.Object({ valid: Type.Literal(true) }, { additionalProperties: false }),
  Type.Object({ valid: Type.Literal(false), error: ErrorBody }, { additionalProperties: false }),
  Type.Object(
    {
      /** True when every item is. */
      valid: Type.Boolean(),
      results: Type.Array(ValidateItem, { maxItems: BATCH_MAX_ITEMS }),
    },
    { additionalProperties: false },
  ),
])
export type ValidateAnswer = Static<typeof ValidateAnswer>
