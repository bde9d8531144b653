import { existsSync } from "node:fs"
import { configDefaults, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.ts"

// The live-mode end-to-end tests (Stripe, Mollie) drive Debian's Chromium, as the server's browser tests do
// (packages/server's vitest.config.ts): without one they are left out, loudly, and CI's KASSA_REQUIRE_BROWSER keeps
// them in.
const chromium = process.env.KASSA_CHROMIUM ?? "/usr/bin/chromium"
const haveBrowser = existsSync(chromium) || process.env.KASSA_REQUIRE_BROWSER === "1"
if (!haveBrowser) {
  console.warn(`\n[kassa] ${chromium} not found: test/live*.e2e.test.ts (Chromium) are not run.\n`)
}

export default mergeConfig(shared, {
  test: {
    exclude: [
      ...configDefaults.exclude,
      ...(haveBrowser ? [] : ["test/live.e2e.test.ts", "test/live-mollie.e2e.test.ts"])
    ]
  }
})
