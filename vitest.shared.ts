import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

/** The test settings every package shares; each package's vitest.config.ts re-exports them. */
export default defineConfig({
  // Workspace packages resolve to their TypeScript sources, so tests never run against a stale build.
  resolve: { conditions: ["@kassa/source"] },
  ssr: { resolve: { conditions: ["@kassa/source"] } },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    // vitest's default is one worker fewer than the cores: one file at a time on a two-core machine, while most files
    // wait on sockets, databases and child processes. One worker per core runs two at once (the server's suite took
    // 404 s with two, 756 s with one; the CLI's 210 s with two, 250 s with one).
    maxWorkers: Math.max(2, availableParallelism()),
    hookTimeout: 60_000,
    // expect.poll's 1 s default is shorter than a page's second request on a busy two-core machine (a checkout logo
    // once took longer in CI): a poll that is going to pass does so as soon as it can, whatever the bound.
    expect: { poll: { timeout: 10_000 } },
    // The JSON report feeds the totals line that `npm test` prints last.
    reporters: ["default", ["json", { outputFile: "test-results/vitest.json" }]]
  }
})
