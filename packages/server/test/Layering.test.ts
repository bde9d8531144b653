/**
 * The server's layers (issue 13, ARCHITECTURE "Allowed imports"): templates (src/pages/**) import only other
 * templates, the core and effect — they receive view models, never a repository's rows or a service — and the
 * repositories and domain services (`*Repository.ts`, users/, audit/, database/) never import the HTTP side
 * (http/, dashboard/) or the templates. A test in the style of the core's Purity test: it reads the imports.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const srcDir = join(import.meta.dirname, "..", "src")
const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

// Code only: comments may show examples that mention anything.
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1")

/** The import specifiers of a file: relative ones resolved to a path under src/, others as written. */
const importsOf = (file: string) =>
  [...code(readFileSync(file, "utf8")).matchAll(/(?:import|export)[^"';]*?from\s+["']([^"']+)["']/g)].map((match) => {
    const specifier = match[1] ?? ""
    return specifier.startsWith(".") ? relative(srcDir, resolve(dirname(file), specifier)) : specifier
  })

const files = sources(srcDir).map((file) => ({ file, name: relative(srcDir, file) }))

const pages = files.filter(({ name }) => name.startsWith("pages/"))
const repositories = files.filter(
  ({ name }) =>
    name.endsWith("Repository.ts") ||
    name.startsWith("users/") ||
    name.startsWith("audit/") ||
    name.startsWith("database/")
)

describe("the server's layers", () => {
  it("has sources on each side to check", () => {
    expect(pages.length).toBeGreaterThan(15)
    expect(repositories.length).toBeGreaterThan(10)
  })

  it.each(pages.map(({ name, file }) => [name, file]))(
    "%s (a template) imports only templates, the core and effect",
    (name, file) => {
      for (const specifier of importsOf(file)) {
        const allowed =
          specifier.startsWith("pages/") ||
          specifier === "@kassa/core" ||
          specifier === "effect" ||
          specifier.startsWith("effect/") ||
          // Hashing a page's own inline scripts for its Content-Security-Policy (DocsPages).
          specifier === "node:crypto"
        expect(allowed, `${specifier} in ${name}`).toBe(true)
      }
    }
  )

  it.each(repositories.map(({ name, file }) => [name, file]))(
    "%s (a repository or domain service) imports neither HTTP, dashboards nor templates",
    (name, file) => {
      for (const specifier of importsOf(file)) {
        const forbidden =
          specifier.startsWith("http/") ||
          specifier.startsWith("dashboard/") ||
          specifier.startsWith("pages/") ||
          specifier.startsWith("effect/http")
        expect(forbidden, `${specifier} in ${name}`).toBe(false)
      }
    }
  )
})
