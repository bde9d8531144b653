import { readdirSync, readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"

const packageRoot = new URL("../", import.meta.url)
const read = (path: string) => readFileSync(new URL(path, packageRoot), "utf8")

describe("package", () => {
  it("has no runtime dependencies", () => {
    const manifest = JSON.parse(read("package.json")) as Record<string, unknown>
    for (const field of ["dependencies", "peerDependencies", "optionalDependencies", "bundleDependencies"]) {
      expect(Object.keys((manifest[field] as object | undefined) ?? {}), field).toEqual([])
    }
  })

  it("src imports nothing but its own files", () => {
    const files = readdirSync(new URL("src/", packageRoot)).filter((file) => file.endsWith(".ts"))
    // Comments hold usage examples that import the package itself; only code counts.
    const code = (file: string) =>
      read(`src/${file}`)
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/\/\/.*$/gm, "")
    const specifiers = files.flatMap((file) =>
      [...code(file).matchAll(/\b(?:from|import)\s*(["'][^"']*["'])|\b(?:import|require)\s*\(([^)]*)\)/g)].map(
        (match) => `${file}: ${(match[1] ?? match[2] ?? "").trim().replace(/^["']|["']$/g, "")}`
      )
    )
    expect(specifiers).toContain("index.ts: ./verify.ts")
    expect(specifiers.filter((specifier) => !/: \.\/[\w.-]+\.ts$/.test(specifier))).toEqual([])
  })

  it("the README shows every recipe exactly as the tests run it", () => {
    const readme = read("README.md")
    const shown = new Map(
      [...readme.matchAll(/<!-- recipe: (test\/recipes\/[\w.-]+) -->\n```ts\n([\s\S]*?)```/g)].map((match) => [
        match[1],
        match[2]
      ])
    )
    const recipes = readdirSync(new URL("test/recipes/", packageRoot))
      .filter((file) => file.endsWith(".ts") && file !== "app.ts")
      .map((file) => `test/recipes/${file}`)
    expect(recipes.length).toBe(5)
    expect([...shown.keys()].sort()).toEqual([...recipes].sort())
    for (const recipe of recipes) {
      expect(shown.get(recipe), recipe).toBe(read(recipe))
    }
  })
})
