/** The sender pools' rules, for the benchmarks (packages/bench/src/api/pool-choice.ts). */
export { type ChoiceMember, chooseSender, memberHash, spreadByWeight } from './choose.ts'
export { exclusionOf, type MemberHealth } from './health.ts'
