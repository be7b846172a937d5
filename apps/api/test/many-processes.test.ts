import { manyProcessesSuite } from './many-processes-suite.ts'

manyProcessesSuite('single')
