/**
 * The package as published: its manifest, the built output checked by publint, and the README's examples shown
 * exactly as the tests run them. Then every published package of the workspace as a merchant gets it: packed, installed
 * with plain npm into a project outside the workspace, type-checked by a strict consumer and run against a server.
 */
import { execFile, execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { publint } from "publint"
import { formatMessage } from "publint/utils"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../../server/test/support/TestServer.ts"

const packageRoot = new URL("../", import.meta.url)
const read = (path: string) => readFileSync(new URL(path, packageRoot), "utf8")
const manifest = JSON.parse(read("package.json")) as {
  readonly exports: Record<string, Record<string, string>>
  readonly dependencies: Record<string, string>
  readonly peerDependencies: Record<string, string>
  readonly devDependencies: Record<string, string>
}

describe("package", () => {
  it("takes effect as a peer from the workspace's version up to the next major, and builds against that version", () => {
    const effect = (JSON.parse(read("../../package.json")) as typeof manifest).devDependencies.effect
    expect(manifest.peerDependencies).toEqual({ effect: `^${effect}` })
    expect(manifest.devDependencies.effect).toBe(effect)
    expect(Object.keys(manifest.dependencies).sort()).toEqual(["@kassa/core", "@kassa/webhook-verify"])
  })

  it("exports sources to the workspace first, then types and code from dist", () => {
    expect(Object.keys(manifest.exports["."] ?? {})).toEqual(["@kassa/source", "types", "default"])
  })

  it("builds, and publint finds nothing wrong with the built package", async () => {
    const pkgDir = fileURLToPath(packageRoot)
    execFileSync("pnpm", ["run", "build"], { cwd: pkgDir, stdio: "pipe" })
    const { messages, pkg } = await publint({ pkgDir, level: "warning", strict: true, pack: "pnpm" })
    expect(messages.map((message) => formatMessage(message, pkg))).toEqual([])
  }, 60_000)

  it("the README shows every example exactly as the tests run it", () => {
    const readme = read("README.md")
    const shown = new Map(
      [...readme.matchAll(/<!-- example: (test\/examples\/[\w.-]+) -->\n```ts\n([\s\S]*?)```/g)].map((match) => [
        match[1],
        match[2]
      ])
    )
    const examples = readdirSync(new URL("test/examples/", packageRoot)).map((file) => `test/examples/${file}`)
    expect(examples.sort()).toEqual(["test/examples/effect.ts", "test/examples/promise.ts"])
    expect([...shown.keys()].sort()).toEqual(examples)
    for (const example of examples) expect(shown.get(example), example).toBe(read(example))
  })
})

const workspace = new URL("../../../", import.meta.url)
const run = promisify(execFile)
// npm (a script run by `node` from PATH) and the `kassa` bin must run on the Node.js of the tests, not the machine's.
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}` }
/** The machine's Node 20 (as in packages/cli/test/NodeVersion.test.ts): the oldest engine a package may declare. */
const node20 = "/usr/bin/node"

interface Manifest {
  readonly name: string
  readonly private?: boolean
  readonly repository?: { readonly type: string; readonly url: string; readonly directory: string }
  readonly engines?: { readonly node?: string }
  readonly bin?: Record<string, string>
  readonly files?: ReadonlyArray<string>
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
}

const published = readdirSync(new URL("packages/", workspace))
  .map((dir) => ({
    dir,
    manifest: JSON.parse(readFileSync(new URL(`packages/${dir}/package.json`, workspace), "utf8"))
  }))
  .filter((pkg): pkg is { dir: string; manifest: Manifest } => pkg.manifest.private !== true)
  .sort((a, b) => a.dir.localeCompare(b.dir))

/** Whether a package's code imports effect, so its manifest must name effect. */
const importsEffect = (dir: string) =>
  readdirSync(new URL(`packages/${dir}/src/`, workspace), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .some((file) =>
      /from "effect(?:\/[\w/-]+)?"/.test(readFileSync(new URL(`packages/${dir}/src/${file}`, workspace), "utf8"))
    )

/** A strict consumer: the README's SDK snippet and the client's README examples, in TypeScript as a merchant writes it. */
const consumerTsconfig = {
  compilerOptions: {
    target: "ES2023",
    // effect's declarations name Web Crypto's CryptoKey, which only the DOM lib declares as a type.
    lib: ["ES2023", "DOM"],
    module: "NodeNext",
    moduleResolution: "NodeNext",
    types: ["node"],
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    noUnusedLocals: true,
    noUnusedParameters: true,
    verbatimModuleSyntax: true,
    allowImportingTsExtensions: true,
    allowJs: true,
    checkJs: true,
    // The published declarations are checked too, not only the consumer's code.
    skipLibCheck: false,
    noEmit: true
  }
}

const examplesMain = `import { Effect } from "effect"
import { KassaLive, payOrder } from "./effect.ts"
import { checkoutUrl, paidTotal } from "./promise.ts"

const url = await checkoutUrl(\`order-\${crypto.randomUUID()}\`, 990)
const payment = await Effect.runPromise(payOrder(\`order-\${crypto.randomUUID()}\`, 1990).pipe(Effect.provide(KassaLive)))
console.log(JSON.stringify({ url, effectPayment: payment.id, amount: payment.amount, paid: await paidTotal() }))
`

/** Plain JavaScript: the verifier's engines say Node 20, where no .ts file runs. */
const verifyScript = `import { sign, verify, WebhookVerificationError } from "@kassa/webhook-verify"

const body = JSON.stringify({ id: "evt_1", event: "payment.paid", created_at: new Date().toISOString(), data: {} })
const header = await sign(body, "whsec_test")
const event = await verify(body, header, "whsec_test")
const tampered = await verify(body.replace("evt_1", "evt_2"), header, "whsec_test").catch((error) => error)
const outcome = tampered instanceof WebhookVerificationError ? tampered.reason : "accepted"
console.log(JSON.stringify({ id: event.id, tampered: outcome }))
`

describe("the published packages, installed with npm outside the workspace", () => {
  const root = mkdtempSync(join(tmpdir(), "kassa-published-"))
  const tarballs = join(root, "tarballs")
  const consumer = join(root, "consumer")
  const packed = new Map<string, string>()
  let server: RunningServer
  let apiKey: string

  const readmeSnippet = () => {
    const match = /## The SDK\n\n```ts\n([\s\S]*?)```/.exec(readFileSync(new URL("README.md", workspace), "utf8"))
    expect(match?.[1]).toContain('baseUrl: "http://localhost:4000"')
    return match?.[1] ?? ""
  }

  beforeAll(async () => {
    // pnpm pack ships dist as it is: build first (the server's build also copies the dashboards' assets; the CLI's
    // tsc -b builds the client and the verifier through its references).
    for (const dir of ["server", "cli"]) {
      execFileSync("pnpm", ["run", "build"], {
        cwd: fileURLToPath(new URL(`packages/${dir}`, workspace)),
        stdio: "pipe"
      })
    }
    for (const { dir, manifest } of published) {
      const { stdout } = await run("pnpm", ["pack", "--pack-destination", tarballs, "--json"], {
        cwd: fileURLToPath(new URL(`packages/${dir}`, workspace)),
        env
      })
      packed.set(manifest.name, (JSON.parse(stdout) as { filename: string }).filename)
    }
    mkdirSync(consumer)
    writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
    // One install for every tarball: npm takes each @kassa dependency from the tarballs given, the rest (effect, as
    // the peer range allows) from the registry.
    await run(
      "npm",
      // A stalled registry connection is given up after 30 s and retried (npm's default waits 5 minutes on one).
      [
        "install",
        "--no-audit",
        "--no-fund",
        "--prefer-offline",
        "--fetch-timeout=30000",
        "--fetch-retries=2",
        ...packed.values(),
        "@types/node@24.19.2"
      ],
      { cwd: consumer, env }
    )
    writeFileSync(join(consumer, "tsconfig.json"), JSON.stringify(consumerTsconfig, null, 2))
    for (const example of ["promise.ts", "effect.ts"]) {
      writeFileSync(join(consumer, example), read(`test/examples/${example}`))
    }
    writeFileSync(join(consumer, "main.ts"), examplesMain)
    writeFileSync(join(consumer, "verify.mjs"), verifyScript)
    const { startServer } = await import("../../server/test/support/TestServer.ts")
    server = await startServer("pglite")
    apiKey = (await server.createApplication()).testKey
    writeFileSync(
      join(consumer, "readme.ts"),
      `${readmeSnippet().replace("http://localhost:4000", server.baseUrl)}console.log(JSON.stringify(payment))\n`
    )
  }, 240_000)
  afterAll(async () => {
    await server?.close()
    rmSync(root, { recursive: true, force: true })
  })

  const runInConsumer = async (command: string, args: ReadonlyArray<string>) =>
    (
      await run(command, args, {
        cwd: consumer,
        env: { ...env, KASSA_API_KEY: apiKey, KASSA_BASE_URL: server.baseUrl }
      })
    ).stdout

  it("are the five packages, none private", () => {
    expect(published.map(({ manifest }) => manifest.name)).toEqual([
      "@kassa/cli",
      "@kassa/client",
      "@kassa/core",
      "@kassa/server",
      "@kassa/webhook-verify"
    ])
  })

  it("each tarball holds the root LICENSE, its build, and a manifest naming its repository and engines", async () => {
    const license = readFileSync(new URL("LICENSE", workspace), "utf8")
    expect(license).toMatch(/^MIT License\n/)
    const rootEffect = (JSON.parse(readFileSync(new URL("package.json", workspace), "utf8")) as typeof manifest)
      .devDependencies.effect
    for (const { dir, manifest } of published) {
      const tarball = packed.get(manifest.name) ?? ""
      const files = (await run("tar", ["tzf", tarball])).stdout.split("\n")
      expect(files, dir).toEqual(
        expect.arrayContaining([
          "package/LICENSE",
          "package/package.json",
          "package/dist/index.js",
          "package/dist/index.d.ts"
        ])
      )
      expect((await run("tar", ["xzOf", tarball, "package/LICENSE"])).stdout, dir).toBe(license)
      const shipped = (await run("tar", ["xzOf", tarball, "package/package.json"])).stdout
      expect(shipped, dir).not.toContain("workspace:")
      const inTarball = JSON.parse(shipped) as Manifest
      expect(inTarball.repository, dir).toEqual({
        type: "git",
        url: published[0]?.manifest.repository?.url,
        directory: `packages/${dir}`
      })
      expect(inTarball.engines?.node, dir).toMatch(/^>=\d+(\.\d+\.\d+)?$/)
      // `pnpm changeset version` writes CHANGELOG.md; npm packs it only when `files` names it.
      expect(inTarball.files, dir).toContain("CHANGELOG.md")
      // A library takes the application's effect (one copy, any later 4.x); a program (server, CLI) brings its own,
      // as a range, so `pnpm deploy --prod` and `npm install --global` install it with the program.
      const effect = importsEffect(dir) ? `^${rootEffect}` : undefined
      const program = inTarball.bin !== undefined
      expect(inTarball.peerDependencies?.effect, dir).toBe(program ? undefined : effect)
      expect(inTarball.dependencies?.effect, dir).toBe(program ? effect : undefined)
    }
  })

  it("a strict TypeScript consumer of them type-checks, the README's SDK snippet included", async () => {
    const tsc = fileURLToPath(new URL("node_modules/.bin/tsc", workspace))
    await expect(run(tsc, ["-p", "."], { cwd: consumer, env })).resolves.toMatchObject({ stdout: "" })
  }, 60_000)

  it("the README's SDK snippet and the client's README examples run against a server", async () => {
    const payment = JSON.parse(await runInConsumer(process.execPath, ["readme.ts"])) as Record<string, unknown>
    expect(payment).toMatchObject({ amount: 1250, order_reference: "order-1", status: "pending" })
    expect(payment.checkout_url).toEqual(expect.stringContaining(server.baseUrl))
    const examples = JSON.parse(await runInConsumer(process.execPath, ["main.ts"])) as Record<string, unknown>
    expect(examples).toMatchObject({ amount: 1990, paid: 0 })
    expect(examples.url).toEqual(expect.stringContaining(server.baseUrl))
    // The installed kassa command (its bin, the client and the server packages it loads) reads the same payment.
    const shown = JSON.parse(
      await runInConsumer(join(consumer, "node_modules/.bin/kassa"), ["payments", "get", String(payment.id), "--json"])
    ) as Record<string, unknown>
    expect(shown).toMatchObject({ id: payment.id, amount: 1250 })
  }, 60_000)

  it("the webhook verifier runs on the oldest Node.js its engines allow", async () => {
    const verifier = published.find(({ dir }) => dir === "webhook-verify")?.manifest
    expect(verifier?.engines?.node).toBe(">=20")
    expect((await run(node20, ["--version"])).stdout).toMatch(/^v20\./)
    for (const node of [node20, process.execPath]) {
      expect(JSON.parse(await runInConsumer(node, ["verify.mjs"])), node).toEqual({
        id: "evt_1",
        tampered: "no_matching_signature"
      })
    }
  })
})
