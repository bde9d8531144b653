import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ServerConfig } from "../src/config/ServerConfig.ts"
import * as PasswordHash from "../src/users/PasswordHash.ts"
import { UserRepository } from "../src/users/UserRepository.ts"
import { createUser, DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./support/TestServer.ts"

describe.each(databases)("dashboard sign-in and sessions on %s", (database) => {
  let server: RunningServer
  let shop: TestApplication
  beforeAll(async () => {
    // Hashes at the test cost: these tests sign in some sixty times, and only the side-by-side one is about the
    // hasher's pace (its user gets a production-cost hash). The production server below hashes at full cost.
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
    shop = await server.createApplication({ name: "Sessions shop" })
  })
  afterAll(() => server.close())

  /** Stores the user's password as production would (full scrypt cost), so checking it takes a production check's time. */
  const atFullCost = async (user: DashboardUser) => {
    const stored = await Effect.runPromise(PasswordHash.hash(user.password))
    expect(stored).toMatch(/^scrypt\$32768\$8\$3\$/)
    await server.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`UPDATE users SET password_hash = ${stored} WHERE id = ${user.id}`
      )
    )
    return user
  }

  it("a page without a session redirects to sign-in, and back to it afterwards", async () => {
    const user = await createUser(server, { roles: [[shop.application.id, "viewer"]] })
    const client = new DashboardClient(server.baseUrl)
    const page = await client.get(`/dashboard/apps/${shop.application.id}`)
    expect(page.status).toBe(303)
    expect(page.location).toBe(`/dashboard/login?next=${encodeURIComponent(`/dashboard/apps/${shop.application.id}`)}`)
    const signedIn = await client.login(user.email, user.password, `/dashboard/apps/${shop.application.id}`)
    expect(signedIn.status).toBe(303)
    expect(signedIn.location).toBe(`/dashboard/apps/${shop.application.id}`)
    const app = await client.get(`/dashboard/apps/${shop.application.id}`)
    expect(app.status).toBe(200)
    expect(app.html).toContain("Sessions shop")
  })

  it("the session cookie is HttpOnly, SameSite and scoped to /dashboard; the database keeps only its hash", async () => {
    const user = await createUser(server)
    const client = new DashboardClient(server.baseUrl)
    const answer = await client.login(user.email, user.password)
    expect(answer.status).toBe(303)
    const cookie = answer.headers.getSetCookie().find((line) => line.startsWith("kassa_session=")) ?? ""
    expect(cookie).toMatch(/HttpOnly/i)
    expect(cookie).toMatch(/SameSite=Lax/i)
    expect(cookie).toMatch(/Path=\/dashboard/i)
    const token = cookie.split(";")[0]?.split("=")[1] ?? ""
    expect(token.length).toBeGreaterThanOrEqual(43)
    const stored = await server.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT token_hash FROM sessions`))
    expect(stored.length).toBeGreaterThan(0)
    for (const row of stored) expect(row.token_hash).not.toBe(token)
  })

  it("production sessions are Secure cookies", async () => {
    const production = await startServer(database, { environment: "production" })
    try {
      const user = await createUser(production, { operatorAdmin: true })
      const client = new DashboardClient(production.baseUrl)
      await client.get("/dashboard/login")
      const answer = await client.post("/dashboard/login", { email: user.email, password: user.password })
      expect(answer.status).toBe(303)
      expect(answer.headers.getSetCookie().find((line) => line.startsWith("kassa_session="))).toMatch(/Secure/i)
      // Production hashes at full cost (the test cost is refused there: see below).
      const [stored] = await production.run(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT password_hash FROM users WHERE id = ${user.id}`)
      )
      expect(String(stored?.password_hash)).toMatch(/^scrypt\$32768\$8\$3\$/)
    } finally {
      await production.close()
    }
  })

  it("the test-only hash cost stops a production start, and only a production one", async () => {
    /** Builds the users' repository as the server does, with these settings and this hash cost; its failure, if any. */
    const build = (environment: "development" | "production", cost: PasswordHash.Cost) =>
      server.run(
        Effect.scoped(Layer.build(Layer.fresh(UserRepository.layer))).pipe(
          Effect.provide(
            Layer.merge(ServerConfig.layerWith({ environment }), Layer.succeed(PasswordHash.HashCost, cost))
          ),
          Effect.exit,
          Effect.map((exit) => (Exit.isFailure(exit) ? String(exit.cause) : undefined))
        )
      )
    expect(await build("production", testPasswordCost)).toContain("for tests only")
    expect(await build("production", PasswordHash.productionCost)).toBeUndefined()
    expect(await build("development", testPasswordCost)).toBeUndefined()
    // Nothing lowered: the production cost, which the production server below signs in with.
    expect(PasswordHash.productionCost).toEqual({ N: 2 ** 15, r: 8, p: 3 })
  })

  it("a wrong password and an unknown address get the same answer", async () => {
    const user = await createUser(server)
    const client = new DashboardClient(server.baseUrl)
    const wrong = await client.login(user.email, "not the password at all")
    const unknown = await client.login("nobody@shop.example", "not the password at all")
    expect(wrong.status).toBe(401)
    expect(unknown.status).toBe(401)
    expect(wrong.html).toContain("The e-mail address or password is not right.")
    expect(unknown.html).toContain("The e-mail address or password is not right.")
    expect(client.cookie("kassa_session")).toBeUndefined()
  })

  it("e-mail addresses are matched whatever their case", async () => {
    const user = await createUser(server)
    const client = new DashboardClient(server.baseUrl)
    expect((await client.login(user.email.toUpperCase(), user.password)).status).toBe(303)
  })

  it("five wrong passwords lock the account from this address: even the right one is refused then", async () => {
    const user = await createUser(server)
    const client = new DashboardClient(server.baseUrl)
    for (let attempt = 1; attempt <= 4; attempt++)
      expect((await client.login(user.email, `wrong password ${attempt}`)).status).toBe(401)
    const fifth = await client.login(user.email, "wrong password 5")
    expect(fifth.status).toBe(429)
    expect(fifth.html).toContain("locked until")
    expect(Number(fifth.headers.get("retry-after"))).toBeGreaterThan(0)
    const right = await client.login(user.email, user.password)
    expect(right.status).toBe(429)
    expect(client.cookie("kassa_session")).toBeUndefined()
  })

  it("wrong guesses sent side by side from one address: at most two are checked at once, the rest refused", async () => {
    const user = await atFullCost(await createUser(server))
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, attempt) =>
        new DashboardClient(server.baseUrl).login(user.email, `parallel wrong guess ${attempt}`)
      )
    )
    for (const answer of answers) expect([401, 429]).toContain(answer.status)
    const refused = answers.filter((answer) => answer.status === 429)
    expect(refused.length).toBeGreaterThan(0)
    for (const answer of refused) {
      expect(answer.html).toContain("Another sign-in from your address is being checked")
      expect(answer.headers.get("retry-after")).toBe("1")
    }
  })

  it("sign-in without the form's token, or from another site, is refused", async () => {
    const user = await createUser(server)
    const client = new DashboardClient(server.baseUrl)
    await client.get("/dashboard/login")
    const noToken = await client.post(
      "/dashboard/login",
      { email: user.email, password: user.password },
      { csrf: false }
    )
    expect(noToken.status).toBe(403)
    const crossSite = await client.post(
      "/dashboard/login",
      { email: user.email, password: user.password },
      { headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" } }
    )
    expect(crossSite.status).toBe(403)
    expect(client.cookie("kassa_session")).toBeUndefined()
  })

  it("after sign-in only dashboard paths are followed (no open redirect)", async () => {
    const user = await createUser(server)
    for (const next of [
      "https://evil.example/",
      "//evil.example/dashboard",
      "/\\evil.example/dashboard",
      "/api/v1/payments",
      "/dashboardx",
      "/dashboard/../docs"
    ]) {
      const client = new DashboardClient(server.baseUrl)
      const answer = await client.login(user.email, user.password, next)
      expect(answer.location, next).toBe("/dashboard")
    }
  })

  it("a `next` with non-ASCII or control characters never fails the redirect after sign-in (issue #11)", async () => {
    const user = await createUser(server)
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["/dashboard/é?q=ü", "/dashboard/%C3%A9?q=%C3%BC"],
      ["/dashboard/account?x=\u2028", "/dashboard"],
      ["/dashboard/account\r\nSet-Cookie: a=b", "/dashboard"],
      ["/dashboard/account\n", "/dashboard"],
      ["/dashboard/apps/../account", "/dashboard/account"]
    ]
    for (const [next, expected] of cases) {
      const client = new DashboardClient(server.baseUrl)
      const answer = await client.login(user.email, user.password, next)
      expect(answer.status, JSON.stringify(next)).toBe(303)
      expect(answer.location, JSON.stringify(next)).toBe(expected)
      expect(client.cookie("kassa_session")).toBeDefined()
    }
  })

  it("signing out ends the session on the server, not only in the browser", async () => {
    const user = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    const client = await DashboardClient.signIn(server, user)
    const token = client.cookie("kassa_session") ?? ""
    await client.get(`/dashboard/apps/${shop.application.id}`)
    const out = await client.post("/dashboard/logout")
    expect(out.status).toBe(303)
    expect(client.cookie("kassa_session")).toBeUndefined()
    const replay = await fetch(`${server.baseUrl}/dashboard/apps/${shop.application.id}`, {
      redirect: "manual",
      headers: { cookie: `kassa_session=${token}` }
    })
    expect(replay.status).toBe(303)
    expect(replay.headers.get("location")).toMatch(/^\/dashboard\/login/)
  })

  it("sign-out is a form post with the session's token: a forged one changes nothing", async () => {
    const user = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    const client = await DashboardClient.signIn(server, user)
    await client.get(`/dashboard/apps/${shop.application.id}`)
    const forged = await client.post("/dashboard/logout", {}, { csrf: "forged-token" })
    expect(forged.status).toBe(403)
    expect((await client.get(`/dashboard/apps/${shop.application.id}`)).status).toBe(200)
  })

  it("a form token is the session's own: another session's token is refused like a forged one", async () => {
    const first = await DashboardClient.signIn(server, await createUser(server))
    const second = await DashboardClient.signIn(server, await createUser(server))
    const page = await second.get("/dashboard/account")
    const secondToken = /name="csrf" value="([^"]+)"/.exec(page.html)?.[1] ?? ""
    expect(secondToken).not.toBe("")
    expect((await first.post("/dashboard/logout", {}, { csrf: secondToken })).status).toBe(403)
    expect((await first.get("/dashboard/account")).status).toBe(200)
  })

  /** Moves the user's sessions back in time, as if the clock had run on. */
  const ageSessions = (userId: string, column: "last_seen_at" | "expires_at", interval: string) =>
    server.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql`UPDATE sessions SET ${sql(column)} = ${sql(column)} - ${interval}::interval WHERE user_id = ${userId}`
      )
    )

  it("a session ends after 2 hours without a request, and 12 hours after sign-in whatever happens", async () => {
    const idle = await createUser(server)
    const idleClient = await DashboardClient.signIn(server, idle)
    await ageSessions(idle.id, "last_seen_at", "1 hour 55 minutes")
    expect((await idleClient.get("/dashboard/account")).status).toBe(200)
    await ageSessions(idle.id, "last_seen_at", "2 hours 1 minute")
    expect((await idleClient.get("/dashboard/account")).location).toMatch(/^\/dashboard\/login/)

    const busy = await createUser(server)
    const busyClient = await DashboardClient.signIn(server, busy)
    const [created] = await server.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql`SELECT extract(epoch FROM expires_at - created_at)::int AS seconds FROM sessions WHERE user_id = ${busy.id}`
      )
    )
    expect(Number(created?.seconds)).toBe(12 * 60 * 60)
    await ageSessions(busy.id, "expires_at", "12 hours 1 second")
    expect((await busyClient.get("/dashboard/account")).location).toMatch(/^\/dashboard\/login/)
  })

  it("a right password ends a run of wrong ones: four wrong, right, one wrong is not a lock", async () => {
    const user = await createUser(server)
    const client = new DashboardClient(server.baseUrl)
    for (let attempt = 1; attempt <= 4; attempt++) await client.login(user.email, `wrong password ${attempt}`)
    expect((await new DashboardClient(server.baseUrl).login(user.email, user.password)).status).toBe(303)
    expect((await client.login(user.email, "wrong once more")).status).toBe(401)
    expect((await new DashboardClient(server.baseUrl).login(user.email, user.password)).status).toBe(303)
  })

  it("an operator admin lands on the applications; a member of one application lands in it", async () => {
    const admin = await createUser(server, { operatorAdmin: true })
    const member = await createUser(server, { roles: [[shop.application.id, "developer"]] })
    const adminClient = await DashboardClient.signIn(server, admin)
    expect((await adminClient.get("/dashboard")).location).toBe("/dashboard/operator")
    const memberClient = await DashboardClient.signIn(server, member)
    expect((await memberClient.get("/dashboard")).location).toBe(`/dashboard/apps/${shop.application.id}`)
  })

  it("a user sees only applications they are a member of (others are 404, not 403)", async () => {
    const other = await server.createApplication({ name: "Someone else's shop" })
    const member = await createUser(server, { roles: [[shop.application.id, "viewer"]] })
    const client = await DashboardClient.signIn(server, member)
    expect((await client.get(`/dashboard/apps/${other.application.id}`)).status).toBe(404)
    expect((await client.get("/dashboard/apps/not-a-uuid")).status).toBe(404)
    expect((await client.get("/dashboard/operator/applications")).status).toBe(404)
  })

  it("sign-ins, failures and sign-outs are in the audit log with the address", async () => {
    const user = await createUser(server)
    const client = new DashboardClient(server.baseUrl)
    await client.login(user.email, "a wrong password here")
    await client.login(user.email, user.password)
    const audit = await server.request("/admin/api/v1/audit?limit=100", { key: server.adminToken })
    expect(audit.status).toBe(200)
    const entries = (audit.body as { data: Array<{ actor: string; action: string; ip: string | null }> }).data.filter(
      (entry) => entry.actor === user.email
    )
    expect(entries.map((entry) => entry.action)).toEqual(["user.signed_in", "user.sign_in_failed"])
    for (const entry of entries) expect(entry.ip).toBe("127.0.0.1")
  })

  it("dashboard pages forbid framing and scripts other than the server's own", async () => {
    const login = await fetch(`${server.baseUrl}/dashboard/login`)
    const policy = login.headers.get("content-security-policy") ?? ""
    expect(policy).toContain("frame-ancestors 'none'")
    expect(policy).not.toContain("unsafe-inline'; script")
    expect(policy).not.toMatch(/script-src[^;]*unsafe-inline/)
    expect(login.headers.get("x-frame-options")).toBe("DENY")
  })
})
