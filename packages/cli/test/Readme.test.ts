/**
 * The README's examples, run: every `kassa …` line of its shell blocks, in order, with its placeholders
 * (`pk_test_…`, `<payment-id>`, `<application-id>`, …) filled in from a real server, must succeed as written.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { sign } from "@kassa/webhook-verify"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeStripe, startFakeStripe } from "../../server/test/support/FakeStripe.ts"
import {
  freePort,
  type RunningServer,
  startServer,
  type TestApplication
} from "../../server/test/support/TestServer.ts"
import { kassa, killLeftovers, start } from "./support.ts"

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")

/** The `kassa` lines and `export` lines of every ```sh block, comments and the build line left out. */
const exampleLines = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)]
  .flatMap((match) => (match[1] ?? "").split("\n"))
  .map((line) => line.replace(/\s+#.*$/, "").trim())
  .filter((line) => line.startsWith("kassa ") || line.startsWith("export "))

/** Splits a shell line into words, honouring single and double quotes. */
const words = (line: string): Array<string> =>
  [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3] ?? "")

describe("the README's examples", () => {
  let server: RunningServer
  // Stripe for `kassa admin provider`: the stateful fake, behind KASSA_STRIPE_API_URL.
  let stripe: FakeStripe
  let app: TestApplication
  // The test application's webhook URL: `kassa trigger` with KASSA_ADMIN_TOKEN waits for a delivery that succeeds.
  let receiver: Server
  let dir: string
  const env: Record<string, string> = {}
  const values = new Map<string, string>()

  beforeAll(async () => {
    stripe = await startFakeStripe()
    server = await startServer("pglite", { stripeApiUrl: stripe.url })
    receiver = createServer((_request, response) => response.writeHead(200).end())
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
    app = await server.createApplication({
      webhook_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`
    })
    dir = mkdtempSync(join(tmpdir(), "kassa-readme-"))
    env.KASSA_BASE_URL = server.baseUrl
  })
  afterAll(async () => {
    killLeftovers()
    await server.close()
    await stripe.settled()
    await stripe.close()
    await new Promise((resolve) => receiver.close(resolve))
  })

  /** The newest payment of the test application, through the API. */
  const newestPayment = async () => {
    const page = await server.request("/api/v1/payments?limit=1", { key: app.testKey })
    return ((page.body as { data: ReadonlyArray<{ id: string; status: string }> }).data[0] ?? { id: "" }).id
  }

  const admin = async (path: string) =>
    (await server.request(`/admin/api/v1${path}`, { key: server.adminToken })).body as {
      data: ReadonlyArray<{ id: string }>
    }

  /** Fills a line's placeholders with values that make the example meaningful right now. */
  const fill = async (line: string): Promise<string> => {
    let filled = line
      .replaceAll("pk_test_…", app.testKey)
      .replaceAll("KASSA_ADMIN_TOKEN=…", `KASSA_ADMIN_TOKEN=${server.adminToken}`)
      .replaceAll("STRIPE_SECRET_KEY=sk_test_…", `STRIPE_SECRET_KEY=${stripe.secretKey}`)
    if (filled.includes("<payment-id>")) {
      // Cancel needs a pending payment, refund a paid one; the other lines take the newest.
      if (/ cancel /.test(filled) || / simulate /.test(filled)) {
        await kassa(["payments", "create", "--amount", "1500", "--order-reference", `readme-${crypto.randomUUID()}`], {
          env
        })
      }
      filled = filled.replaceAll("<payment-id>", await newestPayment())
    }
    if (filled.includes("<event-id>")) {
      // The payments examples above made events: the newest of them.
      const events = await server.request("/api/v1/events?limit=1", { key: app.testKey })
      const [newest] = (events.body as { data: ReadonlyArray<{ id: string }> }).data
      filled = filled.replaceAll("<event-id>", newest?.id ?? "")
    }
    if (filled.includes("<application-id>")) {
      const apps = await admin("/applications")
      filled = filled.replaceAll("<application-id>", apps.data.at(-1)?.id ?? "")
    }
    if (filled.includes("<key-id>")) {
      const keys = await admin(`/applications/${values.get("application") ?? ""}/keys`)
      const live = keys.data.filter(
        (key) => !("revoked_at" in key) || (key as { revoked_at: unknown }).revoked_at === null
      )
      filled = filled.replaceAll("<key-id>", live.at(-1)?.id ?? "")
    }
    if (filled.includes("<user-id>")) {
      const users = await admin("/users")
      filled = filled.replaceAll("<user-id>", users.data.at(-1)?.id ?? "")
    }
    if (filled.includes("<delivery-id>")) {
      // The payments examples above changed the test application's payments, so it has deliveries.
      const deliveries = await admin(`/applications/${app.application.id}/deliveries`)
      filled = filled.replaceAll("<delivery-id>", deliveries.data[0]?.id ?? "")
    }
    if (filled.includes("whsec_…")) {
      // A real delivery body and its signature in place of the example's.
      const body = JSON.stringify({
        id: `evt_${crypto.randomUUID()}`,
        event: "payment.paid",
        created_at: new Date().toISOString(),
        data: { id: crypto.randomUUID(), status: "paid" }
      })
      writeFileSync(join(dir, "body.json"), body)
      const header = await sign(body, app.webhookSecret)
      filled = filled.replaceAll("whsec_…", app.webhookSecret).replace(/'t=[^']*'/, `'${header}'`)
    }
    return filled
  }

  it("has examples for every command group", () => {
    const groups = new Set(exampleLines.filter((line) => line.startsWith("kassa ")).map((line) => words(line)[1]))
    expect([...groups].sort()).toEqual(["--help", "admin", "events", "payments", "serve", "trigger", "webhooks"])
  })

  // One test, since each line depends on the ones before it: some 30 `kassa` commands, two of them long-running
  // processes (serve, webhooks listen): 17–28 s on this 2-core machine; 300 s keeps it far from the timeout on a slow one.
  it("runs every example line as written, placeholders filled in", async () => {
    for (const line of exampleLines) {
      const filled = await fill(line)
      if (filled.startsWith("export ")) {
        const [name, value] = filled.slice("export ".length).split("=")
        if (name !== undefined && value !== undefined) env[name] = value
        continue
      }
      const args = words(filled).slice(1)
      if (args[0] === "serve" || (args[0] === "webhooks" && args[1] === "listen")) {
        // Long-running: it must start, and stop cleanly.
        // A port found free, below the ephemeral range the test process's own connections take theirs from.
        const port = String(await freePort())
        const running = start(
          args.map((arg) => (arg === "4000" || arg === "4242" ? port : arg)),
          { ...env, KASSA_DATA_DIR: dir },
          { cwd: dir }
        )
        await running.waitFor(new RegExp(port), 60_000)
        expect(await running.stop(), filled).toBe(0)
        continue
      }
      const result = await kassa(args, { env, timeoutMs: 60_000, cwd: dir })
      expect(result.code, `${filled}\n${result.stdout}\n${result.stderr}`).toBe(0)
      if (args[0] === "admin" && args[1] === "apps" && args[2] === "create") {
        const apps = await admin("/applications")
        values.set("application", apps.data.at(-1)?.id ?? "")
      }
    }
  }, 300_000)
})
