/**
 * Sign-in throttling by client address (issue #11), over real HTTP: the server trusts the test's loopback as a proxy,
 * so each request names its client address in `X-Forwarded-For` (as a load balancer would).
 *
 * - A stranger's wrong guesses block only their own address: the owner signs in from theirs.
 * - A locked pair and an unknown e-mail address get the same answers.
 * - Thirty wrong passwords from one address (any e-mail addresses) lock that address, and only it.
 * - A flood of sign-ins from many addresses is answered 503 with `Retry-After` beyond the hasher's bounded queue,
 *   instead of queueing (40 in flight kept a real user waiting 28 s before).
 */
import { LoginThrottle } from "@kassa/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { databases, type RunningServer, startServer, testPasswordCost } from "./support/TestServer.ts"

describe.each(databases)("sign-in throttle on %s", (database) => {
  const settings = { trustedProxies: ["127.0.0.1"] }
  let server: RunningServer
  beforeAll(async () => {
    // Password hashes at the test cost: the throttle's rules count answers, not time, and at production cost these
    // tests' fifty-odd checks take half a minute per database. The flood test, which is about the hasher's pace,
    // has a server of its own at production cost.
    server = await startServer(database, settings, { passwordCost: testPasswordCost })
  })
  afterAll(() => server.close())

  let next = 0
  /** A fresh documentation-range address (RFC 5737), so tests do not share address states. */
  const freshAddress = () => {
    next += 1
    return `198.51.${Math.floor(next / 250)}.${(next % 250) + 1}`
  }

  const loginFrom = async (address: string, email: string, password: string, on: RunningServer = server) => {
    const client = new DashboardClient(on.baseUrl)
    await client.get("/dashboard/login")
    const answer = await client.post(
      "/dashboard/login",
      { email, password },
      { headers: { "x-forwarded-for": address } }
    )
    return { ...answer, client }
  }

  /** The answer's page with what differs by request (the e-mail address, the time, the form token) taken out. */
  const shape = (html: string, email: string) =>
    html
      .replaceAll(email, "EMAIL")
      .replace(/locked until [^.<]+/, "locked until TIME")
      .replace(/name="csrf" value="[^"]+"/, 'name="csrf" value="TOKEN"')

  it("a stranger's wrong guesses lock only their own address: the owner still signs in from theirs", async () => {
    const owner = await createUser(server)
    const stranger = freshAddress()
    for (let attempt = 1; attempt < LoginThrottle.maxFailures; attempt++)
      expect((await loginFrom(stranger, owner.email, `guess number ${attempt}`)).status).toBe(401)
    const locked = await loginFrom(stranger, owner.email, "guess number 5")
    expect(locked.status).toBe(429)
    expect(locked.html).toContain("locked until")
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThanOrEqual(59)
    // The stranger cannot get in even with the right password now…
    expect((await loginFrom(stranger, owner.email, owner.password)).status).toBe(429)
    // …but the owner, from another address, is not locked out.
    const own = await loginFrom(freshAddress(), owner.email, owner.password)
    expect(own.status).toBe(303)
    expect(own.client.cookie("kassa_session")).toBeDefined()
  })

  it("a locked account and an unknown e-mail address are answered alike", async () => {
    const user = await createUser(server)
    const unknown = `nobody-${crypto.randomUUID().slice(0, 8)}@shop.example`
    const known = freshAddress()
    const other = freshAddress()
    for (let attempt = 1; attempt <= LoginThrottle.maxFailures + 1; attempt++) {
      const a = await loginFrom(known, user.email, `guess number ${attempt}`)
      const b = await loginFrom(other, unknown, `guess number ${attempt}`)
      expect(a.status, `attempt ${attempt}`).toBe(b.status)
      expect(shape(a.html, user.email)).toBe(shape(b.html, unknown))
      expect(a.headers.get("retry-after") === null).toBe(b.headers.get("retry-after") === null)
    }
    // The right password during the block: the same answer as yet another guess at the unknown address.
    const right = await loginFrom(known, user.email, user.password)
    const guess = await loginFrom(other, unknown, "one more guess")
    expect(right.status).toBe(429)
    expect(shape(right.html, user.email)).toBe(shape(guess.html, unknown))
  })

  it("thirty wrong passwords from one address lock the address for every account, and no other address", async () => {
    const user = await createUser(server)
    const guesser = freshAddress()
    // Distinct e-mail addresses, so no pair is blocked: only the address rule can refuse. Two at a time, the most
    // one address may have checked at once.
    for (let attempt = 0; attempt < LoginThrottle.addressMaxFailures; attempt += 2) {
      const answers = await Promise.all(
        [attempt, attempt + 1].map((index) =>
          loginFrom(guesser, `guess-${index}-${crypto.randomUUID().slice(0, 6)}@shop.example`, "a wrong password")
        )
      )
      for (const answer of answers) expect(answer.status).toBe(401)
    }
    const refused = await loginFrom(guesser, user.email, user.password)
    expect(refused.status).toBe(429)
    expect(refused.html).toContain("locked until")
    expect((await loginFrom(freshAddress(), user.email, user.password)).status).toBe(303)
    // Thirty password checks, at production cost about two a second here: well within a minute and a half.
  }, 90_000)

  it("beyond the hasher's bounded queue sign-ins are refused at once with 503 and Retry-After, never queued", async () => {
    // At production cost, so that checks take a production check's time and the queue fills as it would.
    const full = await startServer(database, settings)
    try {
      const user = await createUser(full)
      // As on a server that has checked unknown addresses before (the decoy hash is made at the first one).
      expect((await loginFrom(freshAddress(), "nobody-yet@shop.example", "a wrong password", full)).status).toBe(401)
      const flood = await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          loginFrom(freshAddress(), `flood-${index}@shop.example`, "a wrong password", full)
        )
      )
      for (const answer of flood) expect([401, 503]).toContain(answer.status)
      const busy = flood.filter((answer) => answer.status === 503)
      expect(busy.length).toBeGreaterThan(0)
      for (const answer of busy) {
        expect(answer.headers.get("retry-after")).toBe("2")
        expect(answer.html).toContain("Kassa is checking many sign-ins right now")
      }
      // Once the flood is over, sign-in works again.
      expect((await loginFrom(freshAddress(), user.email, user.password, full)).status).toBe(303)
    } finally {
      await full.close()
    }
  }, 60_000)
})
