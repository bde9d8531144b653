/**
 * Sign-in under a flood (issue #11): 40 wrong sign-ins in flight from one client address, and a real user signing in
 * from another address while they are; prints how long the real user waited and what the flood got. The server trusts
 * the loopback as a proxy, so each request names its client address in `X-Forwarded-For`. Figures, not a test: run it
 * by hand (`node --conditions=@kassa/source bench/signin.ts [pglite|postgres]`), on a machine as quiet as you can get.
 * KASSA_BENCH_ROUNDS (3) rounds, each with a fresh attacker address; KASSA_BENCH_SPREAD=1 sends each wrong sign-in
 * from an address of its own (a botnet: only the hasher's bounded queue holds then).
 */
import { startServer } from "../test/support/TestServer.ts"
import { sleep } from "./BenchSupport.ts"

const database = process.argv[2] === "postgres" ? "postgres" : "pglite"
const rounds = Number(process.env.KASSA_BENCH_ROUNDS ?? 3)
const flood = 40
const spread = process.env.KASSA_BENCH_SPREAD === "1"

const server = await startServer(database, { trustedProxies: ["127.0.0.1"] })

/** A sign-in form read and ready to post (its CSRF cookie and token), as a browser holds it. */
const form = async () => {
  const page = await fetch(`${server.baseUrl}/dashboard/login`)
  const cookie = (page.headers.getSetCookie()[0] ?? "").split(";")[0] ?? ""
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? ""
  return { cookie, csrf }
}

const post = async (held: { cookie: string; csrf: string }, address: string, email: string, password: string) => {
  const started = performance.now()
  const answer = await fetch(`${server.baseUrl}/dashboard/login`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      origin: server.baseUrl,
      "sec-fetch-site": "same-origin",
      "x-forwarded-for": address,
      cookie: held.cookie
    },
    body: new URLSearchParams({ csrf: held.csrf, email, password }).toString()
  })
  await answer.arrayBuffer()
  return { status: answer.status, ms: performance.now() - started }
}

const email = `bench-${crypto.randomUUID().slice(0, 8)}@shop.example`
const password = "correct horse battery staple 42"
const created = await server.request("/admin/api/v1/users", {
  method: "POST",
  key: server.adminToken,
  body: { email, password, operator_admin: false }
})
if (created.status !== 201) throw new Error(`creating the user: ${created.status} ${created.text}`)

// Alone first: the cost of one sign-in on this machine.
const alone = await post(await form(), "198.51.100.1", email, password)
console.log(
  `database ${database}${spread ? ", one address per wrong sign-in" : ""}; a sign-in alone: ${alone.ms.toFixed(0)} ms (${alone.status})`
)

for (let round = 1; round <= rounds; round++) {
  const attacker = `203.0.113.${round}`
  const held = await Promise.all(Array.from({ length: flood }, form))
  const user = await form()
  const started = performance.now()
  const wrong = held.map((one, index) =>
    post(one, spread ? `203.0.${round}.${index + 1}` : attacker, `victim-${index}@shop.example`, "not the password")
  )
  // The real user comes in while the flood is in flight.
  await sleep(50)
  const real = await post(user, `198.51.100.${round + 1}`, email, password)
  const answers = await Promise.all(wrong)
  const statuses = new Map<number, number>()
  for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
  console.log(
    `round ${round}: real user ${real.ms.toFixed(0)} ms (${real.status}); flood of ${flood} done after ${(performance.now() - started).toFixed(0)} ms, answers ${[...statuses].map(([status, count]) => `${count}×${status}`).join(", ")}`
  )
  // Let the hasher's queue drain before the next round.
  await sleep(1000)
}

await server.close()
process.exit(0)
