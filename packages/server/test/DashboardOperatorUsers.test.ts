/**
 * Who may use the operator's dashboard pages (issue #6 §2, §4), and the users an operator manages there, over HTTP:
 * only operator admins see the pages, everyone else gets 404 and changes nothing; users are created, added to an
 * application and removed, given a new password, deactivated and reactivated, made operator admin and taken back
 * (never their own account); forged posts to a user's page change nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { operatorRoutes as routes } from "../src/dashboard/DashboardRoutes.ts"
import { createUser, DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import {
  applications,
  operatorForms,
  startOperatorDashboard,
  statusOf,
  stored,
  uuid
} from "./support/DashboardOperatorSupport.ts"
import { databases, type RunningServer } from "./support/TestServer.ts"

describe.each(databases)("the operator's user pages on %s", (database) => {
  let server: RunningServer
  let admin: DashboardUser
  let client: DashboardClient

  beforeAll(async () => {
    ;({ server, admin, client } = await startOperatorDashboard(database))
  })
  afterAll(async () => {
    await server.close()
  })

  const { postOnPage } = operatorForms(() => client)

  it("only operator admins see the operator pages: everyone else gets 404 and changes nothing", async () => {
    const shop = await server.createApplication({ name: "Member's shop", status: "pending_review" })
    const member = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    const memberClient = await DashboardClient.signIn(server, member)
    // The member's own page gives its form token, as a page of theirs would.
    expect((await memberClient.get(`/dashboard/apps/${shop.application.id}`)).status).toBe(200)
    for (const route of routes) {
      // The user pages are tried on the member's own account, the others on their application.
      const path = route.path.replace(":id", route.path.includes("/users/") ? member.id : shop.application.id)
      const answer =
        route.method === "GET"
          ? await memberClient.get(path)
          : await memberClient.post(path, {
              status: "active",
              name: "Taken over",
              email: member.email,
              mode: "live",
              change: "grant_admin",
              password: "a password of my choice"
            })
      expect(answer.status, `${route.method} ${path}`).toBe(404)
    }
    expect((await memberClient.get("/dashboard/operator/applications")).status).toBe(404)
    expect(await statusOf(server, shop.application.id)).toBe("pending_review")
    expect((await stored(server, shop.application.id)).name).toBe("Member's shop")

    const anonymous = new DashboardClient(server.baseUrl)
    const signedOut = await anonymous.get(applications)
    expect(signedOut.status).toBe(303)
    expect(signedOut.location).toMatch(/^\/dashboard\/login\?next=/)
  })

  it("creates users, and adds them to an application and removes them", async () => {
    const shop = await server.createApplication({ name: "Team shop" })
    const email = `new-${crypto.randomUUID().slice(0, 8)}@shop.example`
    const password = "a long enough password"

    expect((await client.get("/dashboard/operator/users")).status).toBe(200)
    const short = await client.post("/dashboard/operator/users", { email, password: "short" })
    expect(short.status).toBe(422)
    expect(short.html).toContain("password must be at least 12 characters")
    expect(short.html).toContain(`value="${email}"`)
    expect(short.html).not.toContain('value="short"')

    const created = await client.post("/dashboard/operator/users", { email, password })
    expect(created.status).toBe(303)
    expect(created.location).toBe("/dashboard/operator/users?notice=user_created")
    const listed = await client.get(created.location ?? "")
    expect(listed.html).toContain("The user is created and can sign in now.")
    expect(listed.html).toContain(email)

    const again = await client.post("/dashboard/operator/users", { email: email.toUpperCase(), password })
    expect(again.status).toBe(422)
    expect(again.html).toContain("A user with this e-mail address exists.")

    const newcomer = await DashboardClient.signIn(server, { email, password })
    expect((await newcomer.get(`/dashboard/apps/${shop.application.id}`)).status).toBe(404)

    const detail = `${applications}/${shop.application.id}`
    const unknown = await postOnPage(detail, `${detail}/members`, { email: "nobody@shop.example", role: "viewer" })
    expect(unknown.status).toBe(422)
    expect(unknown.html).toContain("No user has this e-mail address.")

    const added = await postOnPage(detail, `${detail}/members`, { email, role: "viewer" })
    expect(added.status).toBe(303)
    expect(added.location).toBe(`${detail}?notice=member_saved`)
    const members = await client.get(detail)
    expect(members.html).toMatch(new RegExp(`<td>${email}</td>\\s*<td>viewer</td>`))
    expect((await newcomer.get(`/dashboard/apps/${shop.application.id}`)).status).toBe(200)
    expect((await client.get("/dashboard/operator/users")).html).toContain("(viewer)")

    const userId = new RegExp(`name="user_id" value="(${uuid})"`).exec(members.html)?.[1] ?? ""
    const removed = await client.post(`${detail}/members/remove`, { user_id: userId })
    expect(removed.status).toBe(303)
    expect((await newcomer.get(`/dashboard/apps/${shop.application.id}`)).status).toBe(404)
  })

  /** A user made through the operator API, signed in, with their page's path. */
  const someone = async () => {
    const user = await createUser(server)
    return { user, browser: await DashboardClient.signIn(server, user), page: `/dashboard/operator/users/${user.id}` }
  }

  it("sets a user's new password: their sessions end, the new one signs in, a short one is refused", async () => {
    const { user, browser, page } = await someone()
    const list = await client.get("/dashboard/operator/users")
    expect(list.html).toContain(`href="${page}"`)
    const shown = await client.get(page)
    expect(shown.status).toBe(200)
    expect(shown.html).toContain(user.email)
    expect(shown.html).toContain("Set a new password")

    const short = await client.post(`${page}/password`, { password: "short" })
    expect(short.status).toBe(422)
    expect(short.html).toContain("password must be at least 12 characters")
    expect((await browser.get("/dashboard/account")).status).toBe(200)

    const set = await client.post(`${page}/password`, { password: "a brand new long password" })
    expect(set.status).toBe(303)
    expect(set.location).toBe(`${page}?notice=password_set`)
    expect((await client.get(set.location ?? "")).html).toContain("every session of the user has ended")
    expect((await browser.get("/dashboard/account")).location).toMatch(/^\/dashboard\/login/)
    expect((await new DashboardClient(server.baseUrl).login(user.email, user.password)).status).toBe(401)
    await DashboardClient.signIn(server, { email: user.email, password: "a brand new long password" })
  })

  it("deactivates and reactivates a user, makes them operator admin and takes it back; never their own account", async () => {
    const { user, browser, page } = await someone()
    const change = async (wanted: string) => {
      await client.get(page)
      const answer = await client.post(`${page}/access`, { change: wanted })
      expect(answer.status, answer.html).toBe(303)
      return answer.location ?? ""
    }
    const shop = await server.createApplication({ name: "Leaver's shop" })
    expect(
      (
        await server.request(`/admin/api/v1/users/${user.id}/memberships/${shop.application.id}`, {
          method: "PUT",
          key: server.adminToken,
          body: { role: "developer" }
        })
      ).status
    ).toBe(200)
    expect(await change("deactivate")).toBe(`${page}?notice=deactivated`)
    expect((await client.get(page)).html).toContain("deactivated")
    // Still listed among the application's members (the role is kept), marked as deactivated.
    for (const members of [`${applications}/${shop.application.id}`, `/dashboard/apps/${shop.application.id}/members`])
      expect((await client.get(members)).html).toMatch(
        new RegExp(`${user.email}\\s*<span class="status disabled">deactivated</span></td>`)
      )
    expect((await browser.get("/dashboard/account")).status).toBe(303)
    expect((await new DashboardClient(server.baseUrl).login(user.email, user.password)).status).toBe(401)
    expect((await client.get("/dashboard/operator/users")).html).toMatch(
      new RegExp(`${user.email}</a></td>\\s*<td>—</td>\\s*<td><span class="status disabled">deactivated`)
    )

    const reactivated = await change("reactivate")
    expect(reactivated).toBe(`${page}?notice=user_reactivated`)
    expect((await client.get(reactivated)).html).toContain("The user is active again and can sign in.")
    const back = await DashboardClient.signIn(server, user)
    expect((await back.get("/dashboard/operator/applications")).status).toBe(404)
    expect(await change("grant_admin")).toBe(`${page}?notice=admin_granted`)
    expect((await back.get("/dashboard/operator/applications")).status).toBe(200)
    expect(await change("revoke_admin")).toBe(`${page}?notice=admin_revoked`)
    expect((await back.get("/dashboard/operator/applications")).status).toBe(404)

    const bogus = await client.post(`${page}/access`, { change: "delete_everything" })
    expect(bogus.status).toBe(422)

    // Their own account: no buttons, and a post is refused (they could lock themselves out).
    const own = `/dashboard/operator/users/${admin.id}`
    const ownPage = await client.get(own)
    expect(ownPage.html).toContain("This is your own account")
    expect(ownPage.html).not.toContain(`action="${own}/access"`)
    for (const [path, fields] of [
      [`${own}/access`, { change: "deactivate" }],
      [`${own}/access`, { change: "revoke_admin" }],
      [`${own}/password`, { password: "a password nobody asked for" }]
    ] as const) {
      expect((await client.post(path, fields)).status).toBe(422)
    }
    expect((await client.get("/dashboard/operator/applications")).status).toBe(200)

    const audit = await client.get(`/dashboard/operator/audit?actor=${encodeURIComponent(admin.email)}`)
    for (const action of [
      "user.deactivated",
      "user.reactivated",
      "user.operator_admin_granted",
      "user.operator_admin_revoked"
    ])
      expect(audit.html).toContain(action)
  })

  it("unknown users are 404; forged posts to a user's page are 403 and change nothing", async () => {
    for (const id of [crypto.randomUUID(), "not-an-id"]) {
      expect((await client.get(`/dashboard/operator/users/${id}`)).status).toBe(404)
    }
    const { user, browser, page } = await someone()
    await client.get(page)
    for (const options of [
      { csrf: "forged-token" },
      { csrf: false as const },
      { headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" } }
    ]) {
      expect((await client.post(`${page}/access`, { change: "deactivate" }, options)).status).toBe(403)
      expect((await client.post(`${page}/password`, { password: "a forged long password" }, options)).status).toBe(403)
    }
    expect((await browser.get("/dashboard/account")).status).toBe(200)
    await DashboardClient.signIn(server, user)
  })
})
