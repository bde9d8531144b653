/**
 * The deployment files at the repository's root (issue 14 §5): `Dockerfile`, `.dockerignore`, `compose.yaml` and
 * `deploy/kassa.service`. No container engine runs here, so this checks what they name against the repository: the
 * entry point the build makes, the Node flags of `npm start`, the package and pnpm version they install, the health
 * path the server serves, and that every setting they set is one the server reads (with values it accepts).
 */
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { ServerConfig, settings } from "../src/config/ServerConfig.ts"
import { probeRoutes } from "../src/http/HealthHandlers.ts"

const root = join(import.meta.dirname, "..", "..", "..")
const server = join(root, "packages", "server")
const read = (...path: Array<string>) => readFileSync(join(...path), "utf8")

const dockerfile = read(root, "Dockerfile")
const dockerignore = read(root, ".dockerignore")
const compose = read(root, "compose.yaml")
const unit = read(root, "deploy", "kassa.service")
const serverPackage = JSON.parse(read(server, "package.json")) as { name: string; scripts: Record<string, string> }
const tools = JSON.parse(read(root, "tools", "package.json")) as { dependencies: Record<string, string> }

/** `npm start`: `node <flags> <entry>`. */
const startWords = (serverPackage.scripts.start ?? "").split(/\s+/)
const startFlags = startWords.filter((word) => word.startsWith("--"))
const startEntry = startWords[startWords.length - 1] ?? ""

/** Every environment variable the server's settings read (the one list of settings: ServerConfig), as it asks. */
const knownSettings = new Set<string>()
await Effect.runPromise(
  Effect.gen(function* () {
    return yield* settings
  }).pipe(
    Effect.provide(
      ConfigProvider.layer(
        ConfigProvider.make((path) => {
          knownSettings.add(path.join("."))
          return Effect.succeed(undefined)
        })
      )
    )
  )
)

/** The settings `env` sets load as a start would; the refusal's text, or undefined. */
const refusal = (env: Record<string, string>) =>
  Effect.runPromiseExit(
    Effect.scoped(Layer.build(ServerConfig.layer)).pipe(
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))
    )
  ).then((exit) => (Exit.isFailure(exit) ? String(exit.cause) : undefined))

/** Secrets the files leave to the operator, long enough for production. */
const operatorSecrets = { KASSA_ADMIN_TOKEN: "a".repeat(32), KASSA_SECRET_KEY: "b".repeat(32) }

/** The image's final stage: what follows its last FROM. */
const finalStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "))

/** Dockerfile `ENV a=b \ c=d` settings of the final stage. */
const dockerEnv = Object.fromEntries(
  [...finalStage.replace(/\\\n/g, " ").matchAll(/^ENV (.+)$/gm)].flatMap((match) =>
    [...(match[1] ?? "").matchAll(/([A-Z_]+)=(\S+)/g)].map((pair) => [pair[1] ?? "", pair[2] ?? ""])
  )
)

/** compose.yaml: the `environment:` block of the kassa service, as written (variables unexpanded). */
const composeEnv = Object.fromEntries(
  [
    ...((compose.split(/^ {2}kassa:$/m)[1] ?? "").split(/^ {4}environment:$/m)[1] ?? "").matchAll(
      /^ {6}([A-Z_]+): (.+)$/gm
    )
  ]
    // `${NAME:-default}` → default; `${NAME:?…}` is the operator's to set.
    .map((match) => [match[1] ?? "", (match[2] ?? "").replace(/^\$\{[A-Z_]+:-(.*)\}$/, "$1")])
)

/** kassa.service: `Environment=` lines (quoted or not). */
const unitEnv = Object.fromEntries(
  [...unit.matchAll(/^Environment="?([A-Z_]+)=([^"\n]*)"?$/gm)].map((match) => [match[1] ?? "", match[2] ?? ""])
)

describe("deployment files", () => {
  it("the build makes the entry point they start: src/main.ts compiles to dist/main.js", () => {
    expect(startEntry).toBe("dist/main.js")
    const tsconfig = JSON.parse(read(server, "tsconfig.json")) as {
      compilerOptions: { rootDir: string; outDir: string }
    }
    const source = startEntry.replace(/^dist\//, `${tsconfig.compilerOptions.rootDir}/`).replace(/\.js$/, ".ts")
    expect(tsconfig.compilerOptions.outDir).toBe("dist")
    expect(existsSync(join(server, source))).toBe(true)
    // `pnpm deploy` copies the package's published files: dist must be among them.
    expect((JSON.parse(read(server, "package.json")) as { files: Array<string> }).files).toContain("dist")
  })

  it("Dockerfile: multi-stage, pinned pnpm and Node, the server package, non-root, the flags of npm start", () => {
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2)
    expect(dockerfile).toMatch(/^FROM \S+ AS build$/m)
    expect(finalStage).toMatch(/^COPY --from=build /m)
    expect(dockerfile).toContain(`pnpm@${tools.dependencies.pnpm}`)
    expect(dockerfile).toContain(`FROM node:${tools.dependencies.node}-`)
    for (const filter of dockerfile.matchAll(/--filter "?(@[\w/-]+)/g)) expect(filter[1]).toBe(serverPackage.name)
    expect(dockerfile).toContain("--frozen-lockfile")
    expect(existsSync(join(root, "pnpm-lock.yaml"))).toBe(true)
    // The final stage runs as a user other than root, set after every command that needs root.
    const user = [...finalStage.matchAll(/^USER (\S+)$/gm)].at(-1)?.[1]
    expect(user).toBeDefined()
    expect(["root", "0"]).not.toContain(user)
    expect(finalStage.lastIndexOf("\nUSER ")).toBeGreaterThan(finalStage.lastIndexOf("\nRUN "))
    const cmd = JSON.parse(finalStage.match(/^CMD (\[.*\])$/m)?.[1] ?? "[]") as Array<string>
    expect(cmd).toEqual(["node", ...startFlags, startEntry])
    expect(finalStage).toMatch(/^WORKDIR \/app$/m)
    expect(dockerfile).toContain("deploy --legacy /app")
  })

  it("Dockerfile: the HEALTHCHECK asks /readyz, which the server serves, on the port it listens on", () => {
    const healthcheck = dockerfile.slice(dockerfile.indexOf("HEALTHCHECK")).split("\n\n")[0] ?? ""
    expect(healthcheck).toContain("/readyz")
    expect(probeRoutes).toContainEqual({ method: "GET", path: "/readyz" })
    expect(healthcheck).toContain("process.env.KASSA_PORT || 4000")
    expect(dockerEnv.KASSA_PORT).toBe("4000")
    expect(finalStage).toMatch(/^EXPOSE 4000$/m)
  })

  it(".dockerignore keeps host installs, builds and data out of the build context", () => {
    for (const entry of ["**/node_modules", "**/dist", "**/.kassa", ".git"]) {
      expect(dockerignore.split("\n")).toContain(entry)
    }
  })

  it("compose.yaml: PostgreSQL and Redis services, which the server's settings point at, and the image built here", () => {
    expect(compose).toMatch(/^ {2}postgres:\n {4}image: postgres:\d+$/m)
    expect(compose).toMatch(/^ {2}redis:\n {4}image: redis:\d+$/m)
    expect(compose).toMatch(/^ {2}kassa:\n {4}build: \.$/m)
    expect(new URL(composeEnv.DATABASE_URL ?? "").hostname).toBe("postgres")
    expect(new URL(composeEnv.KASSA_REDIS_URL ?? "").hostname).toBe("redis")
    const database = new URL(composeEnv.DATABASE_URL ?? "")
    expect(compose).toContain(`POSTGRES_USER: ${database.username}`)
    expect(compose).toContain(`POSTGRES_PASSWORD: ${database.password}`)
    expect(compose).toContain(`POSTGRES_DB: ${database.pathname.slice(1)}`)
    expect(compose).toContain(`"${dockerEnv.KASSA_PORT}:${dockerEnv.KASSA_PORT}"`)
  })

  it("kassa.service: starts dist/main.js of the deployed package with the flags of npm start", () => {
    const workingDirectory = unit.match(/^WorkingDirectory=(.+)$/m)?.[1]
    expect(unit).toContain(`pnpm --filter ${serverPackage.name} --prod deploy --legacy ${workingDirectory}`)
    const execStart = (unit.match(/^ExecStart=(.+)$/m)?.[1] ?? "").split(" ")
    expect(execStart).toEqual(["/usr/bin/node", ...startFlags, `${workingDirectory}/${startEntry}`])
    expect(unit).toMatch(/^User=(?!root$)\w+$/m)
    expect(unit).toMatch(/^KillSignal=SIGTERM$/m)
    expect(unitEnv.KASSA_DATA_DIR).toBe(`/var/lib/${unit.match(/^StateDirectory=(.+)$/m)?.[1]}`)
  })

  it("every setting they set is one the server reads, and together they make a production start it accepts", async () => {
    expect(knownSettings.size).toBeGreaterThan(20)
    for (const [file, env] of [
      ["Dockerfile", dockerEnv],
      ["compose.yaml", composeEnv],
      ["kassa.service", unitEnv]
    ] as const) {
      for (const name of Object.keys(env)) expect(knownSettings.has(name), `${file} sets ${name}`).toBe(true)
    }
    const image = { ...dockerEnv, ...composeEnv, ...operatorSecrets }
    expect(await refusal(image)).toBeUndefined()
    expect(await refusal({ ...unitEnv, DATABASE_URL: "postgres://kassa@127.0.0.1/kassa", ...operatorSecrets })).toBe(
      undefined
    )
  })
})
