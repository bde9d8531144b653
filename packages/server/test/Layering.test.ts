/**
 * The server's layers (issue 20, ARCHITECTURE "The server, by layer"), read from the imports as the core's Purity test
 * reads its own. `layers` places every folder of src/, top to bottom: a file imports from its own folder and from
 * folders below it, never above, and the folders sharing a layer (the handlers) do not import one another. A
 * subfolder belongs to its top folder (dashboard/apps with dashboard) but is listed too, so that a new folder anywhere
 * fails here until it is given its place.
 *
 * One departure from the order as first drawn (issue 20): `applications` sits above `audit`, not below it. Issuing a
 * key from a dashboard records its audit entry beside the key (applications/ApiKeyIssuing.ts), as users/Memberships
 * records a membership's; the audit log imports nothing but the database, so nothing else moves.
 *
 * Besides the order: templates (pages/) import only other templates, the core and effect — they receive view models,
 * never a repository's rows or a service; and below `auth` no module imports `effect/http` (routers, requests,
 * responses) but the few listed in `speaksHttp`, which talk HTTP outward.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

/** Every folder of src/, by layer, top to bottom. "." is the entry: main.ts, Launch.ts, Cluster.ts, KassaServer.ts, index.ts. */
const layers: ReadonlyArray<readonly [layer: string, folders: ReadonlyArray<string>]> = [
  ["entry", ["."]],
  ["handlers", ["http", "operator", "dashboard", "dashboard/apps", "dashboard/operator"]],
  ["request guards", ["auth"]],
  ["first start", ["seed"]],
  ["merchant operations", ["payments"]],
  ["live-mode use cases", ["live"]],
  ["payment ledger", ["ledger"]],
  ["daily statistics", ["stats"]],
  ["webhook delivery", ["webhooks"]],
  ["retention", ["retention"]],
  ["users", ["users"]],
  ["provider connector", ["providers", "providers/mollie", "providers/stripe"]],
  ["applications", ["applications"]],
  ["audit log", ["audit"]],
  ["secrets", ["security"]],
  ["database", ["database", "database/migrations"]],
  ["observability", ["observability"]],
  ["configuration", ["config"]],
  ["in-memory structures", ["support"]],
  ["templates", ["pages", "pages/dashboard", "pages/dashboard/assets"]]
]

/** Below `auth`, the modules that import `effect/http` to talk HTTP outward, and why. */
const speaksHttp: ReadonlyMap<string, string> = new Map([
  ["seed/DemoApplication.ts", "prints the address the server listens on"],
  ["webhooks/Dispatcher.ts", "sends deliveries: their headers and trace context"],
  ["observability/Tracing.ts", "exports spans over fetch; the trace context of outgoing calls"]
])

const srcDir = join(import.meta.dirname, "..", "src")
const walk = (dir: string): Array<{ readonly path: string; readonly folder: boolean }> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? [{ path, folder: true }, ...walk(path)] : [{ path, folder: false }]
  })
const entries = walk(srcDir)
const folders = entries.filter(({ folder }) => folder).map(({ path }) => relative(srcDir, path))
const files = entries
  .filter(({ path, folder }) => !folder && path.endsWith(".ts"))
  .map(({ path }) => ({ file: path, name: relative(srcDir, path) }))

// Code only: comments may show examples that mention anything.
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1")

/** A file's imports (static, bare and dynamic) as written, and for a relative one its path under src/. */
const importsOf = (file: string) =>
  [
    ...code(readFileSync(file, "utf8")).matchAll(
      /(?:(?:import|export)[^"';]*?from\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g
    )
  ].map((match) => {
    const specifier = match[1] ?? ""
    const path = specifier.startsWith(".") ? relative(srcDir, resolve(dirname(file), specifier)) : undefined
    return { specifier, path }
  })

/** The unit of a file or folder under src/: its top folder ("." for the entry files). */
const unitOf = (path: string) => (path.includes("/") ? (path.split("/")[0] ?? ".") : ".")
const placeOf = new Map(layers.flatMap(([layer, listed], index) => listed.map((folder) => [folder, { layer, index }])))
const describeUnit = (unit: string) => {
  const place = placeOf.get(unit)
  return place === undefined ? `${unit}/ (not placed)` : `${unit}/ (layer ${place.index + 1}, ${place.layer})`
}

const belowAuth = (name: string) => (placeOf.get(unitOf(name))?.index ?? 0) > (placeOf.get("auth")?.index ?? 0)

describe("the server's layers", () => {
  it("places every folder of src/, each with its top folder", () => {
    expect(files.length).toBeGreaterThan(100)
    expect(files.filter(({ name }) => unitOf(name) === "pages").length).toBeGreaterThan(15)
    expect(
      folders.filter((folder) => !placeOf.has(folder)),
      "folders the table does not place"
    ).toEqual([])
    expect(
      [...placeOf.keys()].filter((folder) => folder !== "." && !folders.includes(folder)),
      "folders the table places that do not exist"
    ).toEqual([])
    expect(
      [...placeOf.entries()]
        .filter(([folder, place]) => placeOf.get(folder.split("/")[0] ?? folder)?.index !== place.index)
        .map(([folder]) => folder),
      "subfolders placed apart from their top folder"
    ).toEqual([])
  })

  it.each(files.map(({ name, file }) => [name, file]))(
    "%s imports only its own folder and folders below",
    (name, file) => {
      const from = unitOf(name)
      const fromPlace = placeOf.get(from)
      const problems: Array<string> = []
      for (const { specifier, path } of importsOf(file)) {
        if (path === undefined) continue
        if (path.startsWith("..")) {
          problems.push(`${name} imports ${specifier}, outside src/`)
          continue
        }
        const to = unitOf(path)
        if (to === from) continue
        const toPlace = placeOf.get(to)
        if (fromPlace === undefined || toPlace === undefined || toPlace.index <= fromPlace.index) {
          const why =
            fromPlace === undefined || toPlace === undefined
              ? "place the folder in `layers`"
              : toPlace.index === fromPlace.index
                ? "beside it"
                : "above it"
          problems.push(
            `${name} imports ${specifier}: ${describeUnit(from)} may not import ${describeUnit(to)}, ${why}`
          )
        }
      }
      expect(problems).toEqual([])
    }
  )

  it.each(files.filter(({ name }) => unitOf(name) === "pages").map(({ name, file }) => [name, file]))(
    "%s (a template) imports only templates, the core and effect",
    (name, file) => {
      for (const { specifier, path } of importsOf(file)) {
        const allowed =
          path?.startsWith("pages/") === true ||
          specifier === "@kassa/core" ||
          specifier === "effect" ||
          specifier.startsWith("effect/") ||
          // Hashing a page's own inline scripts for its Content-Security-Policy (DocsPages).
          specifier === "node:crypto"
        expect(allowed, `${specifier} in ${name}`).toBe(true)
      }
    }
  )

  it("lists only existing modules as speaking HTTP", () => {
    for (const name of speaksHttp.keys()) expect(existsSync(join(srcDir, name)), name).toBe(true)
  })

  it.each(
    files
      .filter(({ name }) => unitOf(name) !== "pages" && belowAuth(name) && !speaksHttp.has(name))
      .map(({ name, file }) => [name, file])
  )("%s (below the request guards) does not import effect/http", (name, file) => {
    for (const { specifier } of importsOf(file)) {
      const forbidden = specifier.startsWith("effect/http")
      expect(forbidden, `${name} imports ${specifier}: ${describeUnit(unitOf(name))} is below auth/`).toBe(false)
    }
  })
})
