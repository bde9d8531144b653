import { defineConfig } from "vitest/config"

/** The test settings every package shares; each package's vitest.config.ts re-exports them. */
export default defineConfig({
  // Workspace packages resolve to their TypeScript sources, so tests never run against a stale build.
  resolve: { conditions: ["@kassa/source"] },
  ssr: { resolve: { conditions: ["@kassa/source"] } },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The JSON report feeds the totals line that `npm test` prints last.
    reporters: ["default", ["json", { outputFile: "test-results/vitest.json" }]]
  }
})
