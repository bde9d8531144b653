/**
 * The core is pure: it imports only effect and its own modules, and reads no clock, randomness, network,
 * environment or file — those come in through Effect services (Clock, SecureRandom, Mac, Digest) or arguments.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"

const srcDir = join(import.meta.dirname, "..", "src")
const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

// Code only: comments may show examples that mention anything.
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1")

// effect modules that do I/O or reach the platform; the core must not use them.
const impure = /^effect\/(?:platform|unstable|cluster|workers|socket|process|FileSystem|Path|Terminal)/

describe("the core does no I/O", () => {
  const files = sources(srcDir)

  it("has sources to check", () => {
    expect(files.length).toBeGreaterThan(20)
  })

  it.each(files.map((file) => [relative(srcDir, file), file]))(
    "%s imports only effect and relative modules",
    (_, file) => {
      const specifiers = [
        ...code(readFileSync(file, "utf8")).matchAll(/(?:import|export)[^"']*from\s+["']([^"']+)["']/g)
      ].map((match) => match[1] ?? "")
      for (const specifier of specifiers) {
        const allowed =
          specifier.startsWith(".") ||
          specifier === "effect" ||
          (specifier.startsWith("effect/") && !impure.test(specifier))
        expect(allowed, `${specifier} in ${file}`).toBe(true)
      }
    }
  )

  it.each(files.map((file) => [relative(srcDir, file), file]))(
    "%s reads no clock, randomness, network or environment",
    (_, file) => {
      const text = code(readFileSync(file, "utf8"))
      for (const forbidden of [
        /Date\.now\(/,
        /new Date\(\s*\)/,
        /Math\.random\(/,
        /\bfetch\(/,
        /\bprocess\./,
        /globalThis\.crypto/,
        /crypto\.getRandomValues/,
        /\brequire\(/,
        /\bimport\(/
      ]) {
        expect(forbidden.test(text), `${forbidden} in ${file}`).toBe(false)
      }
    }
  )
})
