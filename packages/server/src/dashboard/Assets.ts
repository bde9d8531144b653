/**
 * The dashboards' own files (src/pages/dashboard/assets/, copied beside the build by scripts/copy-assets.ts): the
 * stylesheet and the copy-button script, read once at start and served with their content types, cached for an hour
 * and never sniffed. The only scripts and stylesheets the dashboards' Content-Security-Policy lets in.
 */
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { scriptPath, stylesheetPath } from "../pages/dashboard/DashboardLayout.ts"
import { route } from "./DashboardRoute.ts"

const asset = (name: string, contentType: string) => {
  // Read at import: a build without the files fails at start, not at a user's first page.
  const body = readFileSync(new URL(`../pages/dashboard/assets/${name}`, import.meta.url), "utf8")
  return Effect.succeed(
    HttpServerResponse.text(body, {
      contentType,
      headers: { "cache-control": "public, max-age=3600", "x-content-type-options": "nosniff" }
    })
  )
}

export const routes = [
  route("GET", stylesheetPath, "public", asset("dashboard.css", "text/css; charset=utf-8")),
  route("GET", scriptPath, "public", asset("dashboard.js", "text/javascript; charset=utf-8"))
] as const
