/**
 * SSRF protection of webhook attempts (decisions §7). In production a webhook URL must be https, and every address
 * the attempt would connect to must be public: each refused class is refused with `blocked_address`, as an IP literal
 * and as a host name that resolves to it, the latter at connect time (the resolver is injected, so "resolves to" is
 * under the test's control; `localhost` goes through the system's). Outside production local receivers work, and
 * the address connected to is the one the lookup returned.
 */
import { NodeCrypto } from "@effect/platform-node"
import { Duration, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as SafeAddress from "../src/webhooks/SafeAddress.ts"
import * as WebhookSender from "../src/webhooks/WebhookSender.ts"
import { query } from "./support/PaymentFixtures.ts"
import { databases, startServer } from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

/** One address per refused class, written the ways an attacker might. */
const refused: ReadonlyArray<readonly [string, SafeAddress.BlockedClass]> = [
  ["127.0.0.1", "loopback"],
  ["127.255.0.9", "loopback"],
  ["::1", "loopback"],
  ["10.1.2.3", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["192.168.1.1", "private"],
  ["fec0::1", "private"],
  ["169.254.169.254", "metadata"],
  ["100.100.100.200", "metadata"],
  ["168.63.129.16", "metadata"],
  ["fd00:ec2::254", "metadata"],
  ["169.254.1.1", "link_local"],
  ["fe80::1", "link_local"],
  ["fe80::1%eth0", "link_local"],
  ["100.64.0.1", "cgnat"],
  ["100.127.255.254", "cgnat"],
  ["fc00::1", "unique_local"],
  ["fd12:3456:789a::1", "unique_local"],
  ["::ffff:127.0.0.1", "ipv4_mapped"],
  ["::ffff:7f00:1", "ipv4_mapped"],
  ["::ffff:8.8.8.8", "ipv4_mapped"],
  ["::ffff:0:10.0.0.1", "ipv4_mapped"],
  ["::10.0.0.1", "ipv4_mapped"],
  ["64:ff9b::a00:1", "nat64"],
  ["64:ff9b::169.254.169.254", "nat64"],
  ["64:ff9b:1::1", "nat64"],
  ["2002:a00:1::", "tunnel"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "tunnel"],
  ["0.0.0.0", "unspecified"],
  ["::", "unspecified"],
  ["224.0.0.1", "multicast"],
  ["ff02::1", "multicast"],
  ["255.255.255.255", "reserved"],
  ["240.0.0.1", "reserved"],
  ["198.18.0.1", "reserved"],
  ["192.0.0.8", "reserved"],
  ["192.0.2.1", "documentation"],
  ["2001:db8::1", "documentation"]
]

const allowed = ["8.8.8.8", "1.1.1.1", "93.184.215.14", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "2a00:1450::1"]

describe("address classes", () => {
  it.each(refused)("%s is refused as %s", (address, blocked) => {
    expect(SafeAddress.classify(address)).toBe(blocked)
    expect(SafeAddress.isPublic(address)).toBe(false)
  })

  it.each(allowed)("%s is public", (address) => {
    expect(SafeAddress.classify(address)).toBeNull()
  })

  it("something that is not an address is never public", () => {
    expect(SafeAddress.isPublic("example.com")).toBe(false)
    expect(SafeAddress.isPublic("1.2.3")).toBe(false)
    expect(SafeAddress.isPublic("::ffff::1")).toBe(false)
  })
})

/** A resolver that answers from a table and counts its calls. */
const fakeDns = (table: Record<string, ReadonlyArray<string>>) => {
  const calls: Array<string> = []
  const resolver: SafeAddress.Resolver = (hostname, _options, callback) => {
    calls.push(hostname)
    const addresses = table[hostname]
    if (addresses === undefined) {
      callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), [])
      return
    }
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }))
    )
  }
  return { resolver, calls }
}

const attempt = (url: string, options: WebhookSender.SenderOptions) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const sender = yield* WebhookSender.make(options)
      return yield* sender.send({
        url,
        event: "payment.paid",
        body: '{"id":"evt_x"}',
        secrets: ["whsec_0123456789abcdefghijklmnopqrstuv"],
        timestamp: 1_800_000_000
      })
    }).pipe(Effect.scoped, Effect.provide(NodeCrypto.layerMac))
  )

describe("attempts in production", () => {
  let receiver: WebhookReceiver
  beforeAll(async () => {
    receiver = await startReceiver()
  })
  afterAll(() => receiver.close())

  it("http is refused before anything is sent", async () => {
    const outcome = await attempt(receiver.url("/plain"), { production: true })
    expect(outcome).toMatchObject({ succeeded: false, error: "https_required", responseStatus: null })
    expect(receiver.received("/plain")).toHaveLength(0)
  })

  it.each(refused.filter(([address]) => !address.includes("%")))(
    "an https URL with the literal %s is refused with blocked_address",
    async (address) => {
      const host = address.includes(":") ? `[${address}]` : address
      const outcome = await attempt(`https://${host}/hook`, { production: true })
      expect(outcome).toMatchObject({ succeeded: false, error: "blocked_address", responseStatus: null })
    }
  )

  it("literals in other spellings are normalized by the URL parser and refused", async () => {
    for (const url of [
      "https://2130706433/",
      "https://0x7f.1/",
      "https://[::ffff:169.254.169.254]/",
      "https://017700000001/"
    ]) {
      expect((await attempt(url, { production: true })).error, url).toBe("blocked_address")
    }
  })

  it.each(refused.filter(([address]) => !address.includes("%")))(
    "a host name that resolves to %s is refused at connect time",
    async (address) => {
      const dns = fakeDns({ "hooks.merchant.example": [address] })
      const outcome = await attempt("https://hooks.merchant.example/hook", { production: true, resolver: dns.resolver })
      expect(outcome.error).toBe("blocked_address")
      expect(dns.calls).toEqual(["hooks.merchant.example"])
    }
  )

  it("a host name with one public and one private address is refused", async () => {
    const dns = fakeDns({ "mixed.example": ["93.184.215.14", "10.0.0.7"] })
    expect((await attempt("https://mixed.example/", { production: true, resolver: dns.resolver })).error).toBe(
      "blocked_address"
    )
  })

  it("localhost, through the system resolver, is refused", async () => {
    expect((await attempt("https://localhost/hook", { production: true })).error).toBe("blocked_address")
  })

  it("a name that does not resolve is dns", async () => {
    const dns = fakeDns({})
    expect((await attempt("https://nowhere.example/", { production: true, resolver: dns.resolver })).error).toBe("dns")
  })

  it("a public address passes the check (the attempt then fails or not on its own merits)", async () => {
    const dns = fakeDns({ "public.example": ["203.0.113.10"] })
    const documentation = await attempt("https://public.example/", { production: true, resolver: dns.resolver })
    expect(documentation.error).toBe("blocked_address")
    const publicDns = fakeDns({ "public.example": ["192.88.98.1"] })
    const outcome = await attempt("https://public.example/", {
      production: true,
      resolver: publicDns.resolver,
      timeout: Duration.millis(300)
    })
    expect(outcome.error).not.toBe("blocked_address")
    expect(publicDns.calls).toEqual(["public.example"])
  })
})

describe("attempts outside production", () => {
  let receiver: WebhookReceiver
  beforeAll(async () => {
    receiver = await startReceiver()
  })
  afterAll(() => receiver.close())

  it("loopback receivers work, over http", async () => {
    const outcome = await attempt(receiver.url("/dev"), { production: false })
    expect(outcome).toMatchObject({ succeeded: true, responseStatus: 200 })
    expect(receiver.received("/dev")).toHaveLength(1)
  })

  it("the connection goes to the address the lookup returned (one lookup per connection)", async () => {
    const port = new URL(receiver.url()).port
    const dns = fakeDns({ "receiver.test": ["127.0.0.1"] })
    const outcome = await attempt(`http://receiver.test:${port}/pinned`, { production: false, resolver: dns.resolver })
    expect(outcome).toMatchObject({ succeeded: true, responseStatus: 200 })
    expect(dns.calls).toEqual(["receiver.test"])
    const [request] = receiver.received("/pinned")
    expect(request?.headers.host).toBe(`receiver.test:${port}`)
  })
})

describe.each(databases)("the server in production on %s", (database) => {
  it("records blocked_address for a webhook URL that points inside the network, and goes on with the schedule", async () => {
    const server = await startServer(database, { environment: "production" })
    try {
      const { application, testKey } = await server.createApplication({ webhook_url: "https://169.254.169.254/latest" })
      const created = await server.request("/api/v1/payments", {
        method: "POST",
        key: testKey,
        body: { amount: 1000, order_reference: "ssrf-1" }
      })
      const paymentId = (created.body as { id: string }).id
      await server.request(`/api/v1/test/payments/${paymentId}/simulate`, {
        method: "POST",
        key: testKey,
        body: { outcome: "paid" }
      })
      for (let waited = 0; waited < 5_000; waited += 20) {
        const rows = await query(
          server,
          (sql) => sql`
            SELECT d.status, d.attempt_count, a.url, a.error, a.response_status
            FROM deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id
            WHERE d.application_id = ${application.id}
          `
        )
        if (rows.length > 0) {
          expect(rows).toEqual([
            {
              status: "pending",
              attempt_count: 1,
              url: "https://169.254.169.254/latest",
              error: "blocked_address",
              response_status: null
            }
          ])
          return
        }
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      throw new Error("no attempt recorded")
    } finally {
      await server.close()
    }
  })
})
