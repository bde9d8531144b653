/**
 * `kassa admin provider link|show|retire` (issue 12 §2, issue 21 §1) against the real server, whose Stripe and Mollie
 * are the stateful fakes (`KASSA_STRIPE_API_URL`, `KASSA_MOLLIE_API_URL`): the key comes from STRIPE_SECRET_KEY or
 * MOLLIE_API_KEY (or --secret-key) and never appears in the output.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeMollie, startFakeMollie } from "../../server/test/support/FakeMollie.ts"
import { type FakeStripe, startFakeStripe } from "../../server/test/support/FakeStripe.ts"
import { type RunningServer, startServer } from "../../server/test/support/TestServer.ts"
import { json, kassa } from "./support.ts"

let fake: FakeStripe
let mollie: FakeMollie
let server: RunningServer
let env: Record<string, string>

interface Link {
  readonly account_id: string
  readonly key_display: string
  readonly livemode: boolean
  readonly provider: string
  readonly webhook_endpoint_id: string | null
  readonly status: string
  readonly retired_at: string | null
}

beforeAll(async () => {
  fake = await startFakeStripe()
  mollie = await startFakeMollie()
  server = await startServer("pglite", { stripeApiUrl: fake.url, mollieApiUrl: mollie.url })
  env = { KASSA_BASE_URL: server.baseUrl, KASSA_ADMIN_TOKEN: server.adminToken }
})
afterAll(async () => {
  await server.close()
  await fake.settled()
  await fake.close()
  await mollie.close()
})

describe("kassa admin provider", () => {
  it("link (key from STRIPE_SECRET_KEY), show, retire; the key is never printed", async () => {
    const { application } = await server.createApplication()
    const account = fake.addAccount({ livemode: true, restricted: true })
    const linked = await kassa(["admin", "provider", "link", application.id], {
      env: { ...env, STRIPE_SECRET_KEY: account.key }
    })
    expect(linked.code, linked.stderr).toBe(0)
    expect(linked.stdout).toContain(account.accountId)
    expect(linked.stdout).toContain(`rk_live_…${account.key.slice(-4)}`)
    expect(linked.stdout).toContain("shown only as")
    expect(linked.stdout + linked.stderr).not.toContain(account.key)

    const shown = json<Link>(await kassa(["admin", "provider", "show", application.id, "--json"], { env }))
    expect(shown).toMatchObject({ account_id: account.accountId, livemode: true, status: "active", retired_at: null })

    const retired = json<Link>(await kassa(["admin", "provider", "retire", application.id, "--json"], { env }))
    expect(retired).toMatchObject({ account_id: account.accountId, status: "retired" })
    expect(retired.retired_at).not.toBeNull()
    expect(fake.requests.some((r) => r.method === "DELETE" && r.path.endsWith(String(shown.webhook_endpoint_id)))).toBe(
      true
    )

    const gone = await kassa(["admin", "provider", "show", application.id], { env })
    expect(gone.code).toBe(1)
    expect(gone.stderr).toContain("not_found")
  })

  it("link with --secret-key; a key Stripe refuses exits 1 with validation_failed on secret_key", async () => {
    const { application } = await server.createApplication()
    const flagged = json<Link>(
      await kassa(["admin", "provider", "link", application.id, "--secret-key", fake.secretKey, "--json"], { env })
    )
    expect(flagged).toMatchObject({ account_id: fake.accountId, livemode: false, status: "active" })

    const unknown = `sk_live_${"q".repeat(32)}`
    const refused = await kassa(["admin", "provider", "link", application.id, "--json"], {
      env: { ...env, STRIPE_SECRET_KEY: unknown }
    })
    expect(refused.code).toBe(1)
    const { error } = json<{ error: { code: string; fields: Record<string, ReadonlyArray<string>> } }>(refused)
    expect(error.code).toBe("validation_failed")
    expect(Object.keys(error.fields)).toEqual(["secret_key"])
    expect(refused.stdout + refused.stderr).not.toContain(unknown)
    // The link made before is still the one shown.
    const shown = json<Link>(await kassa(["admin", "provider", "show", application.id, "--json"], { env }))
    expect(shown.account_id).toBe(fake.accountId)
  })

  it("--provider mollie (key from MOLLIE_API_KEY) links a Mollie profile with no endpoint; a missing key is a usage error", async () => {
    const { application } = await server.createApplication()
    const profile = mollie.addProfile({ livemode: true })
    const linked = await kassa(["admin", "provider", "link", application.id, "--provider", "mollie"], {
      env: { ...env, MOLLIE_API_KEY: profile.key, STRIPE_SECRET_KEY: fake.secretKey }
    })
    expect(linked.code, linked.stderr).toBe(0)
    expect(linked.stdout).toContain("Mollie")
    expect(linked.stdout).toContain(profile.profileId)
    expect(linked.stdout).toContain(`live_…${profile.key.slice(-4)}`)
    expect(linked.stdout).toContain("none (named on each payment)")
    expect(linked.stdout + linked.stderr).not.toContain(profile.key)
    const shown = json<Link>(await kassa(["admin", "provider", "show", application.id, "--json"], { env }))
    expect(shown).toMatchObject({
      provider: "mollie",
      account_id: profile.profileId,
      livemode: true,
      webhook_endpoint_id: null,
      status: "active"
    })

    // Only STRIPE_SECRET_KEY set: a Mollie link does not take the Stripe key.
    const missing = await kassa(["admin", "provider", "link", application.id, "--provider", "mollie"], {
      env: { ...env, STRIPE_SECRET_KEY: fake.secretKey }
    })
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toContain("MOLLIE_API_KEY")
    expect(json<Link>(await kassa(["admin", "provider", "show", application.id, "--json"], { env })).account_id).toBe(
      profile.profileId
    )
  })
})
