/**
 * `pnpm bench:table`: prints the Markdown table of the latest benchmark results
 * (bench-results/latest.jsonl, or BENCH_RESULTS_FILE). `reset` empties the file: `pnpm bench` does
 * so before its first benchmark, so the table holds one run.
 */
import { readResults, renderTable, resetResults, resultsFile } from './results.ts'

if (process.argv[2] === 'reset') {
  resetResults()
  console.log(`bench results reset: ${resultsFile()}`)
} else {
  process.stdout.write(renderTable(readResults()))
}
