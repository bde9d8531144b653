/**
 * Copies the files that are not TypeScript (the dashboards' stylesheet and script) beside the build, where
 * dashboard/Assets.ts reads them from `dist/` as from `src/`. Runs after `tsc -b` (`pnpm build`).
 */
import { cpSync } from "node:fs"

const folders = ["pages/dashboard/assets"]

for (const folder of folders) {
  cpSync(new URL(`../src/${folder}`, import.meta.url), new URL(`../dist/${folder}`, import.meta.url), {
    recursive: true
  })
}
