/**
 * `pnpm bench` (client): what `import "@kassa/client"` costs a merchant's process — the time to load it and the heap
 * and resident memory it adds — from the built package (dist, as published; turbo builds it first), in a fresh Node.js
 * process each run so nothing is cached between runs. Figures, not a test: run it on a quiet machine.
 * Settings: KASSA_BENCH_RUNS (default 15).
 */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const runs = Number(process.env.KASSA_BENCH_RUNS ?? 15)
const packageDir = fileURLToPath(new URL("../", import.meta.url))

interface Sample {
  readonly ms: number
  readonly heap: number
  readonly rss: number
}

// Measured inside the child around the import alone (not Node.js's own start); collected before and after, so the heap
// figure is what stays reachable once the module graph is loaded. The specifier resolves through the package's own
// exports without the @kassa/source condition: dist/index.js, the published code.
const child = (specifier: string) => `
globalThis.gc()
const before = process.memoryUsage()
const start = performance.now()
await import(${JSON.stringify(specifier)})
const ms = performance.now() - start
globalThis.gc()
const after = process.memoryUsage()
console.log(JSON.stringify({ ms, heap: after.heapUsed - before.heapUsed, rss: after.rss - before.rss }))
`

const sample = (specifier: string): Sample =>
  JSON.parse(
    execFileSync(process.execPath, ["--expose-gc", "--input-type=module", "--eval", child(specifier)], {
      cwd: packageDir,
      encoding: "utf8"
    })
  ) as Sample

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`

const measure = (label: string, specifier: string) => {
  sample(specifier) // warm the file system cache
  const samples = Array.from({ length: runs }, () => sample(specifier))
  const p50 = (key: keyof Sample) =>
    percentile(
      samples.map((s) => s[key]),
      50
    )
  const p90ms = percentile(
    samples.map((s) => s.ms),
    90
  )
  console.log(
    `${label.padEnd(24)} time p50 ${p50("ms").toFixed(1)} ms, p90 ${p90ms.toFixed(1)} ms; ` +
      `heap +${mb(p50("heap"))}, rss +${mb(p50("rss"))} (p50 of ${runs} fresh processes)`
  )
}

console.log(`import cost, Node.js ${process.version}`)
// effect alone for scale: most of the client's cost is effect's modules, which an Effect application loads anyway.
measure('import "effect"', "effect")
measure('import "@kassa/client"', "@kassa/client")
