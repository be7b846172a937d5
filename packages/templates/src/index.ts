export * from './graph.ts'
export * from './sync.ts'
