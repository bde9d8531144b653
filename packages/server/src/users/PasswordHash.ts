/**
 * Dashboard passwords, hashed with scrypt (memory-hard; Node's built-in OpenSSL implementation, so no native
 * dependency). Parameters follow OWASP's Password Storage Cheat Sheet equivalent of N=2^17: N=2^15, r=8, p=3 —
 * the same work with 32 MiB of memory a hash instead of 128. They are stored with the hash
 * (`scrypt$N$r$p$salt$hash`), so raising them later leaves old hashes verifiable.
 *
 * Hashing runs off the event loop (libuv's thread pool) and at most two at once per process, so a burst of sign-ins
 * cannot take the server's memory or its request loop. Checks (`verify`, what unauthenticated requests reach) wait
 * in a bounded queue: when {@link maxWaiting} already wait, a check fails at once with {@link HasherBusy} (the
 * sign-in page answers 503 with `Retry-After`) rather than queueing without bound (issue #11: 40 sign-ins in flight
 * kept a real user waiting 28 s). New hashes (`hash`: operators creating users, a signed-in user changing their
 * password) wait their turn.
 */
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { Context, Effect, Schema, Semaphore } from "effect"
import { type Environment, InvalidSetting } from "../config/ServerConfig.ts"

/** scrypt's cost parameters. */
export interface Cost {
  readonly N: number
  readonly r: number
  readonly p: number
}

/** The cost of every new hash in production (docs/decisions.md). */
export const productionCost: Cost = { N: 2 ** 15, r: 8, p: 3 }

/**
 * The cost of new hashes: {@link productionCost} unless a test lowers it (a production-cost hash is 0.4 s of CPU, and
 * dashboard tests sign in hundreds of times). No setting reaches it, and {@link costFor} refuses anything else in
 * production.
 */
export const HashCost = Context.Reference<Cost>("@kassa/server/users/PasswordHash/HashCost", {
  defaultValue: () => productionCost
})

/** The cost new hashes take in this environment; a lowered {@link HashCost} stops a production start. */
export const costFor = (environment: Environment): Effect.Effect<Cost> =>
  Effect.flatMap(HashCost, (cost) =>
    environment === "production" &&
    (cost.N !== productionCost.N || cost.r !== productionCost.r || cost.p !== productionCost.p)
      ? Effect.die(new InvalidSetting("a lowered password hash cost is for tests only: production hashes at full cost"))
      : Effect.succeed(cost)
  )

const keyLength = 32

/** Hashes computed at once per process. */
export const concurrency = 2
/** Checks that may wait for a hash slot; one more fails with {@link HasherBusy}. */
export const maxWaiting = 4
/** What a refused check tells the client to wait, in seconds: about the time the queue takes to drain. */
export const busyRetryAfterSeconds = 2

/** Too many password checks are running or waiting in this process; try again shortly. */
export class HasherBusy extends Schema.TaggedError<HasherBusy>()("HasherBusy", {}) {}

const permits = Semaphore.makeUnsafe(concurrency)
// Checks running or waiting for a permit.
let admitted = 0

const bounded = <A>(effect: Effect.Effect<A>): Effect.Effect<A, HasherBusy> =>
  Effect.suspend(() => {
    if (admitted >= concurrency + maxWaiting) return Effect.fail(new HasherBusy())
    admitted++
    return Effect.ensuring(
      effect,
      Effect.sync(() => {
        admitted--
      })
    )
  })

const derive = (password: string, salt: Buffer, params: Cost) =>
  Semaphore.withPermit(permits)(
    Effect.callback<Buffer>((resume) => {
      scrypt(
        password.normalize("NFKC"),
        salt,
        keyLength,
        { ...params, maxmem: 256 * params.N * params.r * params.p + 1024 * 1024 },
        (error, key) => resume(error === null ? Effect.succeed(key) : Effect.die(error))
      )
    })
  )

/** The stored form of a new password. */
export const hash = (password: string, cost: Cost = productionCost): Effect.Effect<string> =>
  Effect.suspend(() => {
    const salt = randomBytes(16)
    return derive(password, salt, cost).pipe(
      Effect.map((key) =>
        ["scrypt", cost.N, cost.r, cost.p, salt.toString("base64url"), key.toString("base64url")].join("$")
      )
    )
  })

/**
 * Whether `password` matches the stored hash; compared in constant time. A malformed hash matches nothing. Fails with
 * {@link HasherBusy} when the queue of checks is full.
 */
export const verify = (password: string, stored: string): Effect.Effect<boolean, HasherBusy> => {
  const [scheme, n, r, p, salt, expected] = stored.split("$")
  const params = { N: Number(n), r: Number(r), p: Number(p) }
  if (
    scheme !== "scrypt" ||
    salt === undefined ||
    expected === undefined ||
    !Object.values(params).every(Number.isSafeInteger)
  )
    return Effect.succeed(false)
  const want = Buffer.from(expected, "base64url")
  return bounded(
    derive(password, Buffer.from(salt, "base64url"), params).pipe(
      Effect.map((key) => key.length === want.length && timingSafeEqual(key, want))
    )
  )
}

// One decoy per cost (production has one; tests may add a lowered one), made at its first use.
const decoys = new Map<string, Effect.Effect<string>>()
/**
 * A hash of a random password, verified against when the e-mail address is unknown: an unknown address then costs
 * the same time as a wrong password, so sign-in timing does not reveal which addresses have accounts.
 */
export const decoy = (cost: Cost = productionCost): Effect.Effect<string> => {
  const key = `${cost.N}$${cost.r}$${cost.p}`
  let cached = decoys.get(key)
  if (cached === undefined) {
    cached = Effect.runSync(Effect.cached(hash(randomBytes(18).toString("base64url"), cost)))
    decoys.set(key, cached)
  }
  return cached
}
