/**
 * The operator API's users, memberships and audit log (decisions §8) over HTTP against the real server: users created
 * (the password stored as a scrypt hash, never answered), their passwords changed, deactivated and made operator
 * admins, roles given and taken, and every change made with the admin token recorded, paged, never a read.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DashboardClient } from "./support/DashboardClient.ts"
import { base, operatorApiHelpers, timestamp, uuid } from "./support/OperatorApiSupport.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("operator API on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  const { admin, createApplication, issueKey, validationFields } = operatorApiHelpers(() => server)

  describe("users, memberships and the audit log", () => {
    const email = () => `ops-${crypto.randomUUID().slice(0, 8)}@shop.example`

    it("creates a user without ever answering the password or its hash", async () => {
      const address = email()
      const created = await admin("/users", {
        method: "POST",
        body: { email: address.toUpperCase(), password: "a long enough password", operator_admin: true }
      })
      expect(created.status).toBe(201)
      expect(created.body).toEqual({
        id: expect.stringMatching(uuid),
        email: address,
        operator_admin: true,
        created_at: expect.stringMatching(timestamp),
        last_login_at: null,
        active: true,
        deactivated_at: null,
        memberships: []
      })
      expect(created.text).not.toContain("a long enough password")
      expect(created.text).not.toContain("scrypt")
      const listed = await admin("/users")
      expect((listed.body as { data: Array<{ email: string }> }).data.map((user) => user.email)).toContain(address)
      // Stored as a scrypt hash with the cost of docs/decisions.md (N=2^15, r=8, p=3), a salt and a 32-byte key.
      const [stored] = await server.run(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT password_hash FROM users WHERE email = ${address}`)
      )
      expect(String(stored?.password_hash)).toMatch(/^scrypt\$32768\$8\$3\$[A-Za-z0-9_-]{22,}\$[A-Za-z0-9_-]{43}$/)
      expect(String(stored?.password_hash)).not.toContain("a long enough password")
    })

    it("refuses short passwords, bad addresses, unknown fields and taken addresses with validation_failed", async () => {
      const fields = validationFields(
        await admin("/users", { method: "POST", body: { email: "not-an-address", password: "short", extra: 1 } })
      )
      expect(Object.keys(fields).sort()).toEqual(["email", "extra", "password"])
      expect(fields.password).toEqual(["password must be at least 12 characters"])
      const address = email()
      const body = { email: address, password: "a long enough password" }
      expect((await admin("/users", { method: "POST", body })).status).toBe(201)
      const taken = validationFields(
        await admin("/users", { method: "POST", body: { ...body, email: address.toUpperCase() } })
      )
      expect(taken.email).toEqual(["a user with this e-mail address exists"])
    })

    const newUser = async (password = "the first long password") => {
      const created = await admin("/users", { method: "POST", body: { email: email(), password } })
      expect(created.status).toBe(201)
      return { ...(created.body as { id: string; email: string }), password }
    }
    /** Whether this browser's session still opens the dashboard. */
    const signedIn = async (client: DashboardClient) => (await client.get("/dashboard")).status === 200
    const tryLogin = (address: string, password: string) => new DashboardClient(server.baseUrl).login(address, password)

    it("a new password clears the lock-out and ends every session of the user; the old one stops working", async () => {
      const user = await newUser()
      const browser = await DashboardClient.signIn(server, user)
      expect(await signedIn(browser)).toBe(true)
      for (let i = 0; i < 5; i++) await tryLogin(user.email, "not the password at all")
      expect((await tryLogin(user.email, user.password)).status).toBe(429)

      const changed = await admin(`/users/${user.id}`, {
        method: "PATCH",
        body: { password: "the second long password" }
      })
      expect(changed.status, changed.text).toBe(200)
      expect(changed.text).not.toContain("the second long password")
      expect(await signedIn(browser)).toBe(false)
      expect((await tryLogin(user.email, user.password)).status).toBe(401)
      expect((await tryLogin(user.email, "the second long password")).status).toBe(303)
    })

    it("deactivating ends every session and refuses sign-in like a wrong password; reactivating lets them back", async () => {
      const { application } = await createApplication()
      const user = await newUser()
      expect(
        (await admin(`/users/${user.id}/memberships/${application.id}`, { method: "PUT", body: { role: "owner" } }))
          .status
      ).toBe(200)
      const browser = await DashboardClient.signIn(server, user)

      const deactivated = await admin(`/users/${user.id}`, { method: "PATCH", body: { active: false } })
      expect(deactivated.status).toBe(200)
      expect(deactivated.body).toMatchObject({
        active: false,
        deactivated_at: expect.stringMatching(timestamp),
        memberships: [{ application_id: application.id, role: "owner" }]
      })
      expect(await signedIn(browser)).toBe(false)
      const right = await tryLogin(user.email, user.password)
      const wrong = await tryLogin(user.email, "not the password at all")
      expect(right.status).toBe(401)
      // The same page either way (but for the form's one-time tokens): deactivation is not revealed.
      const tokensOut = (html: string) => html.replace(/[A-Za-z0-9_-]{32,}/g, "")
      expect(tokensOut(right.html)).toBe(tokensOut(wrong.html))
      const listed = (await admin("/users")).body as { data: Array<{ id: string; active: boolean }> }
      expect(listed.data.find((entry) => entry.id === user.id)?.active).toBe(false)

      const reactivated = await admin(`/users/${user.id}`, { method: "PATCH", body: { active: true } })
      expect(reactivated.body).toMatchObject({ active: true, deactivated_at: null })
      const back = await DashboardClient.signIn(server, user)
      expect((await back.get(`/dashboard/apps/${application.id}`)).status).toBe(200)
    })

    it("makes a user an operator admin and takes it back; an empty change changes nothing", async () => {
      const user = await newUser()
      const granted = await admin(`/users/${user.id}`, { method: "PATCH", body: { operator_admin: true } })
      expect(granted.body).toMatchObject({ id: user.id, operator_admin: true, active: true })
      const browser = await DashboardClient.signIn(server, user)
      expect((await browser.get("/dashboard/operator/applications")).status).toBe(200)
      const taken = await admin(`/users/${user.id}`, { method: "PATCH", body: { operator_admin: false } })
      expect(taken.body).toMatchObject({ operator_admin: false })
      expect((await browser.get("/dashboard/operator/applications")).status).toBe(404)
      const unchanged = await admin(`/users/${user.id}`, { method: "PATCH", body: {} })
      expect(unchanged.body).toEqual(taken.body)
      // Taking the role away ends no session; only a new password or deactivation does.
      expect(await signedIn(browser)).toBe(true)
    })

    it("changing users: unknown ids are not_found, bad bodies validation_failed, and the change is audited", async () => {
      for (const id of [crypto.randomUUID(), "not-an-id"]) {
        const response = await admin(`/users/${id}`, { method: "PATCH", body: { active: false } })
        expect(response.status).toBe(404)
        expect((response.body as { error: { code: string } }).error.code).toBe("not_found")
      }
      const user = await newUser()
      const fields = validationFields(
        await admin(`/users/${user.id}`, {
          method: "PATCH",
          body: { password: "short", active: "no", operator_admin: 1, email: "x@y.example" }
        })
      )
      expect(Object.keys(fields).sort()).toEqual(["active", "email", "operator_admin", "password"])
      expect(fields.password).toEqual(["password must be at least 12 characters"])
      // Nothing was changed by the refused request.
      expect((await tryLogin(user.email, user.password)).status).toBe(303)

      expect(
        (await admin(`/users/${user.id}`, { method: "PATCH", body: { password: "the audited long password" } })).status
      ).toBe(200)
      const log = await admin("/audit?limit=1")
      expect((log.body as { data: Array<unknown> }).data[0]).toMatchObject({
        action: "operator_api.users.update",
        actor: "admin token",
        target: `/admin/api/v1/users/${user.id}`
      })
      expect(log.text).not.toContain("the audited long password")
    })

    it("gives and takes roles; unknown users, applications and roles are refused", async () => {
      const { application } = await createApplication()
      const user = (
        await admin("/users", { method: "POST", body: { email: email(), password: "a long enough password" } })
      ).body as { id: string }
      const granted = await admin(`/users/${user.id}/memberships/${application.id}`, {
        method: "PUT",
        body: { role: "viewer" }
      })
      expect(granted.status).toBe(200)
      expect((granted.body as { memberships: unknown }).memberships).toEqual([
        { application_id: application.id, role: "viewer" }
      ])
      const changed = await admin(`/users/${user.id}/memberships/${application.id}`, {
        method: "PUT",
        body: { role: "owner" }
      })
      expect((changed.body as { memberships: unknown }).memberships).toEqual([
        { application_id: application.id, role: "owner" }
      ])
      expect(
        validationFields(
          await admin(`/users/${user.id}/memberships/${application.id}`, { method: "PUT", body: { role: "admin" } })
        ).role
      ).toBeDefined()
      const unknownUser = await admin(`/users/00000000-0000-4000-8000-000000000000/memberships/${application.id}`, {
        method: "PUT",
        body: { role: "viewer" }
      })
      expect(unknownUser.status).toBe(404)
      const unknownApp = await admin(`/users/${user.id}/memberships/not-an-id`, {
        method: "PUT",
        body: { role: "viewer" }
      })
      expect(unknownApp.status).toBe(404)
      const removed = await admin(`/users/${user.id}/memberships/${application.id}`, { method: "DELETE" })
      expect((removed.body as { memberships: unknown }).memberships).toEqual([])
      // Membership changes are filed under the application they concern.
      const log = await admin(`/audit?application_id=${application.id}`)
      expect((log.body as { data: Array<{ action: string }> }).data.map((entry) => entry.action)).toEqual([
        "operator_api.users.removeMembership",
        "operator_api.users.setMembership",
        "operator_api.users.setMembership",
        "operator_api.applications.create"
      ])
    })

    it("records every change made with the admin token, never a read, and pages the log", async () => {
      const { application } = await createApplication({ name: "Audited" })
      await admin(`/applications/${application.id}`)
      // A refused change is no action: neither a 422 nor a 404 is recorded.
      expect(
        (await admin(`/applications/${application.id}`, { method: "PATCH", body: { status: "bogus" } })).status
      ).toBe(422)
      expect((await admin(`/applications/${crypto.randomUUID()}`, { method: "PATCH", body: {} })).status).toBe(404)
      await admin(`/applications/${application.id}`, { method: "PATCH", body: { status: "active" } })
      await issueKey(application.id)
      const log = await admin(`/audit?application_id=${application.id}`)
      expect(log.status).toBe(200)
      const { data } = log.body as {
        data: Array<{ id: number; actor: string; action: string; target: string; ip: string }>
      }
      // The creation is filed under the application it created, though its path names none.
      expect(data.map((entry) => entry.action)).toEqual([
        "operator_api.keys.create",
        "operator_api.applications.update",
        "operator_api.applications.create"
      ])
      for (const entry of data) {
        expect(entry.actor).toBe("admin token")
        expect(entry.ip).toBe("127.0.0.1")
      }
      // The target is the path the change was made on.
      expect(data.map((entry) => entry.target)).toEqual([
        `/admin/api/v1/applications/${application.id}/keys`,
        `/admin/api/v1/applications/${application.id}`,
        "/admin/api/v1/applications"
      ])
      expect(log.text).not.toMatch(/pk_(test|live)_[0-9A-Za-z]{32}/)
      const first = await admin(`/audit?application_id=${application.id}&limit=1`)
      expect(first.body).toMatchObject({ has_more: true })
      const next = await admin(`/audit?application_id=${application.id}&limit=1&before=${data[0]?.id}`)
      expect((next.body as { data: Array<{ action: string }> }).data.map((entry) => entry.action)).toEqual([
        "operator_api.applications.update"
      ])
      // A key's roll and revocation name only the key in their paths: filed under the key's application.
      const key = await issueKey(application.id)
      const rolled = await admin(`/keys/${key.id}/roll`, { method: "POST" })
      expect(rolled.status).toBe(201)
      const successor = (rolled.body as { id: string }).id
      expect((await admin(`/keys/${successor}`, { method: "DELETE" })).status).toBe(200)
      const latest = ((await admin("/audit?limit=2")).body as { data: Array<Record<string, unknown>> }).data
      expect(latest).toMatchObject([
        {
          action: "operator_api.keys.revoke",
          application_id: application.id,
          target: `/admin/api/v1/keys/${successor}`
        },
        {
          action: "operator_api.keys.roll",
          application_id: application.id,
          target: `/admin/api/v1/keys/${key.id}/roll`
        }
      ])
      // A refused roll (the key is revoked now) names nothing and is not recorded.
      expect((await admin(`/keys/${key.id}/roll`, { method: "POST" })).status).toBe(404)
      const after = ((await admin("/audit?limit=1")).body as { data: Array<Record<string, unknown>> }).data
      expect(after[0]?.action).toBe("operator_api.keys.revoke")
    })

    it("needs the admin token", async () => {
      expect((await server.request(`${base}/users`)).status).toBe(401)
      expect((await server.request(`${base}/audit`)).status).toBe(401)
    })
  })
})
