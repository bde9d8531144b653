/**
 * vitest's global setup: builds `kassa` and the packages it loads (`pnpm --filter @kassa/cli... run build`) before any
 * test runs, since the tests run the built command, `dist/main.js`, as users do. A fresh build rather than the
 * TypeScript sources: every `kassa` process would otherwise resolve and strip its ~450 modules' types again
 * (about a tenth of its start), some 170 processes a run. When nothing changed, the build is a check (~2 s of CPU).
 */
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"

export const setup = () =>
  new Promise<void>((resolve, reject) => {
    execFile(
      "pnpm",
      ["--filter", "@kassa/cli...", "run", "build"],
      { cwd: fileURLToPath(new URL("..", import.meta.url)), maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        error === null
          ? resolve()
          : reject(new Error(`The tests run the built kassa, and the build failed:\n${stdout}${stderr}`))
    )
  })
