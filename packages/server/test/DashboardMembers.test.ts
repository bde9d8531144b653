/**
 * An application's members page (issue #6) over HTTP, as a browser uses it: every member sees who is on the team;
 * owners (and operator admins) add existing users, change roles and remove members; an application never loses its
 * last owner through this page; developers and viewers can change nothing; forged posts change nothing; every
 * change is in the audit log under the acting owner's e-mail address.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createUser, DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import { databases, type RunningServer, startServer, testPasswordCost } from "./support/TestServer.ts"

interface AuditRow {
  readonly actor: string
  readonly action: string
  readonly target: string | null
  readonly details: Record<string, unknown>
}

/** The forms on a page (the sign-out form is on every signed-in page). */
const formsOf = (html: string) => html.match(/<form\b/g)?.length ?? 0

describe.each(databases)("an application's members page on %s", (database) => {
  let server: RunningServer

  beforeAll(async () => {
    // Password hashes at the test cost: these tests sign in dozens of times and none is about the hasher (at
    // production cost each sign-in and each new user is 0.4 s of CPU).
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
  })
  afterAll(async () => {
    await server.close()
  })

  /** A fresh application (so tests share no members) with its owner signed in, on the members page. */
  const team = async (name = "Team shop") => {
    const created = await server.createApplication({ name })
    const id = created.application.id
    const owner = await createUser(server, { roles: [[id, "owner"]] })
    const client = await DashboardClient.signIn(server, owner)
    const base = `/dashboard/apps/${id}`
    expect((await client.get(`${base}/members`)).status).toBe(200)
    return { id, owner, client, base, members: `${base}/members` }
  }

  /**
   * A user who shares another application with the team's owner: the only users an owner may add (issue #11 point
   * 15; operator admins add anyone).
   */
  const colleagueOf = async (owner: DashboardUser) => {
    const elsewhere = await server.createApplication({ name: "Elsewhere shop" })
    const granted = await server.request(`/admin/api/v1/users/${owner.id}/memberships/${elsewhere.application.id}`, {
      method: "PUT",
      key: server.adminToken,
      body: { role: "viewer" }
    })
    expect(granted.status, granted.text).toBe(200)
    return createUser(server, { roles: [[elsewhere.application.id, "viewer"]] })
  }

  /** The application's members as e-mail address → role, read from the database. */
  const rolesOf = (applicationId: string) =>
    server.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`
          SELECT u.email, m.role FROM memberships m JOIN users u ON u.id = m.user_id
          WHERE m.application_id = ${applicationId} ORDER BY u.email
        `
      ).pipe(Effect.map((rows) => Object.fromEntries(rows.map((row) => [String(row.email), String(row.role)]))))
    )

  const auditOf = async (applicationId: string): Promise<ReadonlyArray<AuditRow>> => {
    const answer = await server.request(`/admin/api/v1/audit?limit=100&application_id=${applicationId}`, {
      key: server.adminToken
    })
    expect(answer.status, answer.text).toBe(200)
    return (answer.body as { data: Array<AuditRow> }).data
  }

  const membershipEntries = async (applicationId: string) =>
    (await auditOf(applicationId))
      .filter((entry) => entry.action.startsWith("membership."))
      .map(({ actor, action, target, details }) => ({ actor, action, target, details }))

  it("lists every member with their role and what it may do, under a Members entry of the navigation", async () => {
    const own = await team()
    const developer = await createUser(server, { roles: [[own.id, "developer"]] })
    const viewer = await createUser(server, { roles: [[own.id, "viewer"]] })
    const client = await DashboardClient.signIn(server, viewer)
    const page = await client.get(own.members)
    expect(page.status).toBe(200)
    expect(page.html).toContain(`<a href="${own.members}" aria-current="page">Members</a>`)
    for (const [user, role] of [
      [own.owner, "owner"],
      [developer, "developer"],
      [viewer, "viewer"]
    ] as const)
      expect(page.html).toMatch(new RegExp(`<td>${user.email}[^<]*(<span[^>]*>\\(you\\)</span>)?</td><td>${role}</td>`))
    expect(page.html).toContain(
      "view, manage keys, manage webhooks, resend deliveries, request refunds, manage test payments, manage members"
    )
    // The owner's page has the forms, every field labelled.
    const owners = await own.client.get(own.members)
    expect(owners.html).toContain(`action="${own.members}"`)
    expect(owners.html).toMatch(/<label for="field-email">E-mail address<\/label>/)
    expect(owners.html).toMatch(/<label for="field-role">Role<\/label>/)
    for (const user of [own.owner, developer, viewer]) {
      expect(owners.html).toContain(`<label class="sr-only" for="role-${user.id}">Role of ${user.email}</label>`)
      expect(owners.html).toContain(`action="${own.members}/${user.id}/role"`)
      expect(owners.html).toContain(`action="${own.members}/${user.id}/remove"`)
    }
  })

  it("an owner adds a user they share another application with as developer, who can then open it", async () => {
    const own = await team()
    const newcomer = await colleagueOf(own.owner)
    const theirs = await DashboardClient.signIn(server, newcomer)
    expect((await theirs.get(own.base)).status).toBe(404)

    const added = await own.client.post(own.members, { email: newcomer.email.toUpperCase(), role: "developer" })
    expect(added.status, added.html).toBe(303)
    expect(added.location).toBe(`${own.members}?notice=member_added`)
    const after = await own.client.get(added.location ?? "")
    expect(after.html).toContain("The member is saved")
    expect(after.html).toMatch(new RegExp(`<td>${newcomer.email}</td><td>developer</td>`))
    expect(await rolesOf(own.id)).toEqual({ [own.owner.email]: "owner", [newcomer.email]: "developer" })

    // They open the application, and their role lets them act as a developer.
    expect((await theirs.get(own.base)).status).toBe(200)
    expect((await theirs.get(`${own.base}/keys`)).status).toBe(200)
    expect((await theirs.post(`${own.base}/keys`, { mode: "test" })).status).toBe(200)

    const entries = await membershipEntries(own.id)
    expect(entries).toEqual([
      {
        actor: own.owner.email,
        action: "membership.set",
        target: newcomer.id,
        details: { email: newcomer.email, role: "developer", previous_role: null }
      }
    ])
  })

  it("an unknown e-mail address is a field error (422) that tells nothing more, and changes nothing", async () => {
    const own = await team()
    const before = await rolesOf(own.id)
    const unknown = await own.client.post(own.members, { email: "nobody-here@shop.example", role: "owner" })
    expect(unknown.status).toBe(422)
    expect(unknown.html).toMatch(
      /<div class="error" id="field-email-error">No user you share an application with has this e-mail address\. Ask the operator of this Kassa installation to add them\.<\/div>/
    )
    expect(unknown.html).toContain('value="nobody-here@shop.example"')
    expect(unknown.html).toContain('aria-invalid="true"')
    // An empty address and an unknown role are refused the same way.
    const empty = await own.client.post(own.members, { email: "", role: "viewer" })
    expect(empty.status).toBe(422)
    expect(empty.html).toContain("Enter the e-mail address of a user.")
    const existing = await createUser(server)
    const badRole = await own.client.post(own.members, { email: existing.email, role: "admin" })
    expect(badRole.status).toBe(422)
    expect(badRole.html).toContain("The role must be owner, developer or viewer.")
    expect(await rolesOf(own.id)).toEqual(before)
    expect(await membershipEntries(own.id)).toEqual([])
  })

  it("a user the owner shares no application with is answered exactly as an unknown address (issue #11)", async () => {
    const own = await team()
    const stranger = await createUser(server)
    const unknownEmail = `nobody-${crypto.randomUUID().slice(0, 8)}@shop.example`
    const known = await own.client.post(own.members, { email: stranger.email, role: "viewer" })
    const unknown = await own.client.post(own.members, { email: unknownEmail, role: "viewer" })
    expect(known.status).toBe(422)
    expect(unknown.status).toBe(422)
    const shape = (html: string, email: string) =>
      html.replaceAll(email, "EMAIL").replace(/name="csrf" value="[^"]+"/g, 'name="csrf" value="TOKEN"')
    expect(shape(known.html, stranger.email)).toBe(shape(unknown.html, unknownEmail))
    expect(await rolesOf(own.id)).toEqual({ [own.owner.email]: "owner" })
    expect(await membershipEntries(own.id)).toEqual([])
  })

  it("an operator admin adds any user from the application's members page", async () => {
    const own = await team()
    const stranger = await createUser(server)
    const operator = await DashboardClient.signIn(server, await createUser(server, { operatorAdmin: true }))
    const page = await operator.get(own.members)
    expect(page.html).toContain("Any Kassa user")
    const added = await operator.post(own.members, { email: stranger.email, role: "viewer" })
    expect(added.status, added.html).toBe(303)
    expect(await rolesOf(own.id)).toEqual({ [own.owner.email]: "owner", [stranger.email]: "viewer" })
  })

  it("an owner changes a member's role, which applies at once", async () => {
    const own = await team()
    const developer = await createUser(server, { roles: [[own.id, "developer"]] })
    const theirs = await DashboardClient.signIn(server, developer)
    expect((await theirs.get(`${own.base}/keys`)).status).toBe(200)

    const changed = await own.client.post(`${own.members}/${developer.id}/role`, { role: "viewer" })
    expect(changed.status, changed.html).toBe(303)
    expect(changed.location).toBe(`${own.members}?notice=role_changed`)
    expect((await rolesOf(own.id))[developer.email]).toBe("viewer")
    // As a viewer now, their post is refused.
    expect((await theirs.post(`${own.base}/keys`, { mode: "test" })).status).toBe(403)

    // The same role again changes nothing and records nothing.
    await own.client.get(own.members)
    const same = await own.client.post(`${own.members}/${developer.id}/role`, { role: "viewer" })
    expect(same.location).toBe(`${own.members}?notice=role_unchanged`)
    // A bad role is refused; a user who is no member is not made one through this form.
    expect((await own.client.post(`${own.members}/${developer.id}/role`, { role: "root" })).status).toBe(422)
    const outsider = await createUser(server)
    expect((await own.client.post(`${own.members}/${outsider.id}/role`, { role: "owner" })).status).toBe(404)
    expect((await own.client.post(`${own.members}/not-a-uuid/role`, { role: "owner" })).status).toBe(404)
    expect(await rolesOf(own.id)).toEqual({ [own.owner.email]: "owner", [developer.email]: "viewer" })

    expect(await membershipEntries(own.id)).toEqual([
      {
        actor: own.owner.email,
        action: "membership.set",
        target: developer.id,
        details: { email: developer.email, role: "viewer", previous_role: "developer" }
      }
    ])
  })

  it("an owner removes a member after confirming, who then gets 404 on the application", async () => {
    const own = await team()
    const viewer = await createUser(server, { roles: [[own.id, "viewer"]] })
    const theirs = await DashboardClient.signIn(server, viewer)
    expect((await theirs.get(own.base)).status).toBe(200)

    const confirm = await own.client.get(`${own.members}/${viewer.id}/remove`)
    expect(confirm.status).toBe(200)
    expect(confirm.html).toContain("Remove this member?")
    expect(confirm.html).toContain(viewer.email)
    // Asking changes nothing.
    expect((await rolesOf(own.id))[viewer.email]).toBe("viewer")

    const removed = await own.client.post(`${own.members}/${viewer.id}/remove`)
    expect(removed.status, removed.html).toBe(303)
    expect(removed.location).toBe(`${own.members}?notice=member_removed`)
    expect(await rolesOf(own.id)).toEqual({ [own.owner.email]: "owner" })
    expect((await theirs.get(own.base)).status).toBe(404)
    expect((await theirs.get(own.members)).status).toBe(404)
    // Removing them again, or asking to: they are no member.
    expect((await own.client.post(`${own.members}/${viewer.id}/remove`)).status).toBe(404)
    expect((await own.client.get(`${own.members}/${viewer.id}/remove`)).status).toBe(404)

    expect(await membershipEntries(own.id)).toEqual([
      {
        actor: own.owner.email,
        action: "membership.removed",
        target: viewer.id,
        details: { email: viewer.email, role: "viewer" }
      }
    ])
  })

  it("the last owner cannot remove or demote themselves (409) and stays owner", async () => {
    const own = await team()
    const self = `${own.members}/${own.owner.id}`
    const removal = await own.client.post(`${self}/remove`)
    expect(removal.status).toBe(409)
    expect(removal.html).toContain("You are the only owner of this application")
    for (const role of ["developer", "viewer"]) {
      const demoted = await own.client.post(`${self}/role`, { role })
      expect(demoted.status, role).toBe(409)
      expect(demoted.html).toContain("Make another member an owner first")
      // Through the add form as well (adding an existing member sets their role).
      expect((await own.client.post(own.members, { email: own.owner.email, role })).status, role).toBe(409)
    }
    expect(await rolesOf(own.id)).toEqual({ [own.owner.email]: "owner" })
    expect(await membershipEntries(own.id)).toEqual([])

    // With a second owner, the first may step down; then the second is the last and is kept.
    const second = await colleagueOf(own.owner)
    await own.client.get(own.members)
    expect((await own.client.post(own.members, { email: second.email, role: "owner" })).status).toBe(303)
    expect((await own.client.post(`${self}/role`, { role: "viewer" })).status).toBe(303)
    const secondClient = await DashboardClient.signIn(server, second)
    await secondClient.get(own.members)
    const last = await secondClient.post(`${own.members}/${second.id}/remove`)
    expect(last.status).toBe(409)
    expect(last.html).toContain("You are the only owner of this application")
    expect(await rolesOf(own.id)).toEqual({ [own.owner.email]: "viewer", [second.email]: "owner" })

    // An operator admin is held to the rule on this page too; only the operator's own page can take the last owner away.
    const admin = await createUser(server, { operatorAdmin: true })
    const adminClient = await DashboardClient.signIn(server, admin)
    await adminClient.get(own.members)
    const refused = await adminClient.post(`${own.members}/${second.id}/remove`)
    expect(refused.status).toBe(409)
    expect(refused.html).toContain(`${second.email} is the only owner of this application`)
    expect((await rolesOf(own.id))[second.email]).toBe("owner")
    const operatorPage = `/dashboard/operator/applications/${own.id}`
    await adminClient.get(operatorPage)
    expect((await adminClient.post(`${operatorPage}/members/remove`, { user_id: second.id })).status).toBe(303)
    expect(await rolesOf(own.id)).toEqual({ [own.owner.email]: "viewer" })
  })

  it("two owners demoting each other at the same moment leave exactly one owner", async () => {
    for (let round = 0; round < 4; round++) {
      const own = await team(`Race shop ${round}`)
      const other = await createUser(server, { roles: [[own.id, "owner"]] })
      const otherClient = await DashboardClient.signIn(server, other)
      await otherClient.get(own.members)
      const answers = await Promise.all([
        own.client.post(`${own.members}/${other.id}/role`, { role: "viewer" }),
        otherClient.post(`${own.members}/${own.owner.id}/role`, { role: "viewer" })
      ])
      // One change wins; the loser is no owner any more by the time its change is decided (or checked), so 403.
      expect(answers.map((answer) => answer.status).sort(), `round ${round}`).toEqual([303, 403])
      const owners = Object.values(await rolesOf(own.id)).filter((role) => role === "owner")
      expect(owners, `round ${round}`).toHaveLength(1)
    }
  })

  it("developers and viewers see no forms, and every members post of theirs is 403 and changes nothing", async () => {
    const own = await team()
    const developer = await createUser(server, { roles: [[own.id, "developer"]] })
    const viewer = await createUser(server, { roles: [[own.id, "viewer"]] })
    const outsider = await createUser(server)
    const before = await rolesOf(own.id)
    for (const user of [developer, viewer]) {
      const client = await DashboardClient.signIn(server, user)
      const page = await client.get(own.members)
      expect(page.status, user.email).toBe(200)
      // The only form is signing out.
      expect(formsOf(page.html), user.email).toBe(1)
      expect(page.html).not.toContain("Add member")
      expect(page.html).not.toContain("Change role")
      expect((await client.get(`${own.members}/${own.owner.id}/remove`)).status).toBe(403)
      const posts: Array<[string, Record<string, string>]> = [
        [own.members, { email: outsider.email, role: "owner" }],
        [own.members, { email: user.email, role: "owner" }],
        [`${own.members}/${user.id}/role`, { role: "owner" }],
        [`${own.members}/${own.owner.id}/role`, { role: "viewer" }],
        [`${own.members}/${own.owner.id}/remove`, {}],
        [`${own.members}/${user.id}/remove`, {}],
        // Posts refused before anything is read: a bad form, no user.
        [own.members, { email: "nobody-here@shop.example", role: "owner" }],
        [`${own.members}/${own.owner.id}/role`, { role: "root" }],
        [`${own.members}/not-a-uuid/remove`, {}]
      ]
      for (const [path, fields] of posts) expect((await client.post(path, fields)).status, path).toBe(403)
    }
    expect(await rolesOf(own.id)).toEqual(before)
    expect(await membershipEntries(own.id)).toEqual([])
  })

  it("forged posts (no token, a wrong token, another site) are refused with 403 and change nothing", async () => {
    const own = await team()
    const developer = await createUser(server, { roles: [[own.id, "developer"]] })
    const outsider = await createUser(server)
    await own.client.get(own.members)
    const before = await rolesOf(own.id)
    const forgeries = [
      { csrf: false as const },
      { csrf: "not-the-token" },
      { headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" } }
    ]
    for (const options of forgeries) {
      expect((await own.client.post(own.members, { email: outsider.email, role: "owner" }, options)).status).toBe(403)
      expect((await own.client.post(`${own.members}/${developer.id}/role`, { role: "owner" }, options)).status).toBe(
        403
      )
      expect((await own.client.post(`${own.members}/${developer.id}/remove`, {}, options)).status).toBe(403)
    }
    expect(await rolesOf(own.id)).toEqual(before)
    expect(await membershipEntries(own.id)).toEqual([])
  })

  it("unknown methods on the members paths get 405", async () => {
    const own = await team()
    const wrong = await fetch(`${server.baseUrl}${own.members}/${own.owner.id}/role`)
    expect(wrong.status).toBe(405)
    expect(wrong.headers.get("allow")).toBe("POST")
  })
})
