/** The choice of a pool's number: packages/runtime/src/pool-choice.ts (the workers use it too). */
export {
  type Choice,
  type ChoiceInput,
  type ChoiceMember,
  type ChoiceWhy,
  chooseSender,
  memberHash,
  type Sticky,
  spreadByWeight,
} from '@dispatch/runtime'
