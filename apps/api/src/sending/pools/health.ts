/** A pool member's health rules: packages/runtime/src/pool-choice.ts (the workers use them too). */
export { exclusionOf, GONE, type HealthRules, type MemberHealth } from '@dispatch/runtime'
