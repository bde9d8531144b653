/**
 * The signed-in user's own account page (`/dashboard/account`) over HTTP, as a browser uses it: what it shows, and
 * changing the password — the current one checked under the sign-in lock-out, the new one under the password policy,
 * every other session ended, this browser kept signed in, the change audited without secrets.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AuditLog } from "../src/audit/AuditLog.ts"
import { createUser, DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./support/TestServer.ts"

const auditOf = (server: RunningServer, email: string) =>
  server.run(Effect.flatMap(AuditLog, (audit) => audit.list({ actor: email, limit: 50 }))).then((page) => page.entries)

describe.each(databases)("dashboard account page on %s", (database) => {
  let server: RunningServer
  let shop: TestApplication
  beforeAll(async () => {
    // Password hashes at the test cost: nothing here is about the hasher's pace, and at production cost every
    // sign-in and new user is 0.4 s of CPU.
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
    shop = await server.createApplication({ name: "Account shop" })
  })
  afterAll(() => server.close())

  /** A signed-in client that has read the account page (so its next post carries that page's CSRF token). */
  const onAccountPage = async (user: DashboardUser) => {
    const client = await DashboardClient.signIn(server, user)
    const page = await client.get("/dashboard/account")
    expect(page.status, page.html).toBe(200)
    return client
  }

  const change = (client: DashboardClient, current: string, next: string, repeat = next) =>
    client.post("/dashboard/account/password", {
      current_password: current,
      new_password: next,
      repeat_password: repeat
    })

  /** Whether `password` signs `user` in now (a fresh browser). */
  const signsIn = async (user: DashboardUser, password: string) =>
    (await new DashboardClient(server.baseUrl).login(user.email, password)).status === 303

  it("signed out, the page sends the browser to sign in and back to it afterwards", async () => {
    const client = new DashboardClient(server.baseUrl)
    const page = await client.get("/dashboard/account")
    expect(page.status).toBe(303)
    expect(page.location).toBe(`/dashboard/login?next=${encodeURIComponent("/dashboard/account")}`)
    const post = await client.post("/dashboard/account/password", {
      current_password: "x",
      new_password: "y",
      repeat_password: "y"
    })
    expect(post.status).toBe(303)
    expect(post.location).toMatch(/^\/dashboard\/login/)
  })

  it("shows the e-mail address, roles and last sign-in, and a change-password form with labelled fields", async () => {
    const user = await createUser(server, { roles: [[shop.application.id, "developer"]] })
    const client = await DashboardClient.signIn(server, user)
    const page = await client.get("/dashboard/account")
    expect(page.status).toBe(200)
    expect(page.html).toContain(user.email)
    expect(page.html).toContain("Account shop")
    expect(page.html).toContain("<td>developer</td>")
    expect(page.html).toMatch(/Last sign-in \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/)
    expect(page.html).not.toContain("operator admin")
    // The top bar's address is the way here.
    expect(page.html).toMatch(/<a class="who" href="\/dashboard\/account" aria-current="page">/)
    expect(page.html).toMatch(/<form method="post" action="\/dashboard\/account\/password"/)
    for (const [name, autocomplete] of [
      ["current_password", "current-password"],
      ["new_password", "new-password"],
      ["repeat_password", "new-password"]
    ] as const) {
      const input = new RegExp(`<input id="field-${name}" name="${name}" type="password"[^>]*>`).exec(page.html)?.[0]
      expect(input, name).toBeDefined()
      expect(input).toContain(`autocomplete="${autocomplete}"`)
      expect(input).toContain('value=""')
      expect(page.html).toMatch(new RegExp(`<label for="field-${name}">[^<]+</label>`))
    }

    const admin = await createUser(server, { operatorAdmin: true })
    const adminPage = await (await DashboardClient.signIn(server, admin)).get("/dashboard/account")
    expect(adminPage.status).toBe(200)
    expect(adminPage.html).toContain("operator admin")
    // Other pages link to it from the e-mail address too.
    const home = await (await DashboardClient.signIn(server, admin)).get("/dashboard/operator/applications")
    expect(home.html).toMatch(/<a class="who" href="\/dashboard\/account">/)
  })

  it("a change ends every other session, keeps this browser signed in, and only the new password signs in", async () => {
    const user = await createUser(server, { roles: [[shop.application.id, "viewer"]] })
    const other = await DashboardClient.signIn(server, user)
    expect((await other.get(`/dashboard/apps/${shop.application.id}`)).status).toBe(200)
    const client = await onAccountPage(user)
    const before = client.cookie("kassa_session")
    const next = "a brand new passphrase 42"

    const changed = await change(client, user.password, next)
    expect(changed.status, changed.html).toBe(303)
    expect(changed.location).toBe("/dashboard/account?notice=password_changed")
    const cookie = changed.headers.getSetCookie().find((line) => line.startsWith("kassa_session=")) ?? ""
    expect(cookie).toMatch(/HttpOnly/i)
    expect(cookie).toMatch(/SameSite=Lax/i)
    expect(cookie).toMatch(/Path=\/dashboard/i)
    expect(client.cookie("kassa_session")).toBeDefined()
    expect(client.cookie("kassa_session")).not.toBe(before)

    // This browser stays signed in, with the fixed notice.
    const page = await client.get("/dashboard/account?notice=password_changed")
    expect(page.status).toBe(200)
    expect(page.html).toContain("Your password is changed.")
    expect((await client.get(`/dashboard/apps/${shop.application.id}`)).status).toBe(200)

    // The other browser is signed out, and the old cookie opens nothing either.
    const signedOut = await other.get(`/dashboard/apps/${shop.application.id}`)
    expect(signedOut.status).toBe(303)
    expect(signedOut.location).toMatch(/^\/dashboard\/login/)
    const replay = await fetch(`${server.baseUrl}/dashboard/account`, {
      redirect: "manual",
      headers: { cookie: `kassa_session=${before}` }
    })
    expect(replay.status).toBe(303)

    expect(await signsIn(user, user.password)).toBe(false)
    expect(await signsIn(user, next)).toBe(true)
  })

  it("an unknown notice code shows nothing from the request", async () => {
    const user = await createUser(server)
    const client = await DashboardClient.signIn(server, user)
    const page = await client.get("/dashboard/account?notice=%3Cb%3Ehello%3C%2Fb%3E")
    expect(page.status).toBe(200)
    expect(page.html).not.toContain("hello")
  })

  it("a wrong current password is refused next to its field and changes nothing", async () => {
    const user = await createUser(server)
    const other = await DashboardClient.signIn(server, user)
    const client = await onAccountPage(user)
    const refused = await change(client, "not my password at all", "a brand new passphrase 42")
    expect(refused.status).toBe(422)
    expect(refused.html).toContain('<div class="error" id="field-current_password-error">')
    expect(refused.html).toContain("This is not your current password.")
    expect(refused.html).not.toContain("a brand new passphrase 42")
    expect((await other.get("/dashboard/account")).status).toBe(200)
    expect(await signsIn(user, user.password)).toBe(true)
    expect(await signsIn(user, "a brand new passphrase 42")).toBe(false)
  })

  it("five wrong current passwords lock the account, as at sign-in", async () => {
    const user = await createUser(server)
    const client = await onAccountPage(user)
    for (let attempt = 1; attempt <= 4; attempt++)
      expect((await change(client, `wrong password ${attempt}`, "a brand new passphrase 42")).status).toBe(422)
    const fifth = await change(client, "wrong password 5", "a brand new passphrase 42")
    expect(fifth.status).toBe(429)
    expect(fifth.html).toContain("locked until")
    // Locked: even the right current password changes nothing, and sign-in is locked too.
    const right = await change(client, user.password, "a brand new passphrase 42")
    expect(right.status).toBe(429)
    expect((await new DashboardClient(server.baseUrl).login(user.email, user.password)).status).toBe(429)
  })

  it("a new password too short, not repeated alike, or the same as the current one is refused", async () => {
    const user = await createUser(server)
    const client = await onAccountPage(user)
    const cases = [
      ["short", "short", "field-new_password-error", "at least 12 characters"],
      ["a brand new passphrase 42", "a brand new passphrase 43", "field-repeat_password-error", "does not match"],
      [user.password, user.password, "field-new_password-error", "must differ from the current one"],
      ["x".repeat(201), "x".repeat(201), "field-new_password-error", "at most 200 characters"]
    ] as const
    for (const [next, repeat, errorId, message] of cases) {
      const refused = await change(client, user.password, next, repeat)
      expect(refused.status, message).toBe(422)
      expect(refused.html).toContain(`id="${errorId}"`)
      expect(refused.html).toContain(message)
    }
    const empty = await change(client, "", "a brand new passphrase 42")
    expect(empty.status).toBe(422)
    expect(empty.html).toContain("Enter your current password.")
    expect(await signsIn(user, user.password)).toBe(true)
    expect(await signsIn(user, "a brand new passphrase 42")).toBe(false)
  })

  it("a forged post (no token, or from another site) is refused and changes nothing", async () => {
    const user = await createUser(server)
    const client = await onAccountPage(user)
    const fields = {
      current_password: user.password,
      new_password: "a forged passphrase 42",
      repeat_password: "a forged passphrase 42"
    }
    const noToken = await client.post("/dashboard/account/password", fields, { csrf: false })
    expect(noToken.status).toBe(403)
    const crossSite = await client.post("/dashboard/account/password", fields, {
      headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" }
    })
    expect(crossSite.status).toBe(403)
    expect((await client.get("/dashboard/account")).status).toBe(200)
    expect(await signsIn(user, user.password)).toBe(true)
    expect(await signsIn(user, "a forged passphrase 42")).toBe(false)
  })

  it("the change is in the audit log under the user's address, without the passwords", async () => {
    const user = await createUser(server)
    const client = await onAccountPage(user)
    const next = "an audited passphrase 42"
    expect((await change(client, "a wrong current password", next)).status).toBe(422)
    await client.get("/dashboard/account")
    expect((await change(client, user.password, next)).status).toBe(303)
    const entries = await auditOf(server, user.email)
    const changed = entries.find((entry) => entry.action === "user.password_changed")
    expect(changed).toBeDefined()
    expect(changed?.actor).toBe(user.email)
    expect(changed?.target).toBe(user.id)
    expect(changed?.ip).toBe("127.0.0.1")
    expect(entries.map((entry) => entry.action)).toContain("user.password_change_refused")
    const text = JSON.stringify(entries)
    expect(text).not.toContain(user.password)
    expect(text).not.toContain(next)
  })
})
