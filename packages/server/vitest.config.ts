import { existsSync } from "node:fs"
import { configDefaults, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.ts"

// The dashboards' browser tests need a Chromium (Debian's; `.ci/run` installs it). Without one they are left out of
// the run, loudly — and CI sets KASSA_REQUIRE_BROWSER so they can never be left out there.
const chromium = process.env.KASSA_CHROMIUM ?? "/usr/bin/chromium"
const haveBrowser = existsSync(chromium) || process.env.KASSA_REQUIRE_BROWSER === "1"
if (!haveBrowser) {
  console.warn(
    `\n[kassa] ${chromium} not found: the dashboard browser tests (test/browser) are not run. ` +
      "Install Debian's chromium (apt-get install chromium) or set KASSA_CHROMIUM.\n"
  )
}

export default mergeConfig(shared, {
  test: {
    // One worker process runs file after file, keeping the modules it imported: without this, every file starts a new
    // process that imports the whole server through vite's transform again and runs it on a cold JIT (about 3 s of
    // CPU before its first test, and a slower first server). No test here mocks modules or changes process-wide state
    // that it does not restore; a file's servers and processes are closed in its own afterAll. Metrics are
    // process-wide, so a test reads them as differences (test/Metrics.test.ts).
    isolate: false,
    exclude: [...configDefaults.exclude, ...(haveBrowser ? [] : ["test/browser/**"])]
  }
})
