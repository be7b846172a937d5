export * from './database.ts'
export * from './smtp.ts'
export * from './tcp-proxy.ts'
export * from './wait.ts'
