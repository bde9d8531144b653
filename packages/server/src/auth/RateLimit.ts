/**
 * The per-key request budget of the merchant API (decisions §5): `rate_limit_per_minute` requests (120 unless the
 * operator set another) per 60 s window, counted by effect's `RateLimiter`. The counter lives in Redis when
 * `KASSA_REDIS_URL` is set, so every server process shares it, and in this process otherwise.
 *
 * Algorithm: effect's "fixed-window" counter. The first request opens a window; each accepted request adds
 * `60 s / limit` to its lifetime, so a full budget spent at once keeps the window open 60 s and a slower caller's
 * window closes early. Refused requests do not lengthen it: once the window closes the whole budget is back, which is
 * what `RateLimit-Reset` and `Retry-After` report.
 *
 * Redis down (decisions §5): the limit fails open to a count in this process, behind a circuit breaker. The first
 * request that finds the store failed or silent (500 ms) opens the circuit and logs the outage, once; from then on
 * requests are counted in this process at once, without asking Redis, so an outage costs no request any time.
 * Every {@link probeInterval} one probe, in the background, asks Redis again; when it answers the circuit closes,
 * the end of the outage is logged, and counting is shared again.
 */
import * as net from "node:net"
import * as tls from "node:tls"
// Types only: the client's module is loaded when a Redis URL is set (see layerRedis).
import type { NodeRedis } from "@effect/platform-node/NodeRedis"
import { Clock, Context, Duration, Effect, Layer, Option, Redacted, References } from "effect"
import { RateLimiter } from "effect/persistence"
import { ServerConfig } from "../config/ServerConfig.ts"

/** The window every limit counts over; the application setting is per minute. */
export const window = Duration.seconds(60)

/** Redis keys are `<prefix><key id>`. */
export const defaultRedisPrefix = "kassa:ratelimit:"

// A shared store that does not answer quickly is treated as failed: requests must not hang on it.
const storeTimeout = Duration.millis(500)

/** How often, while the store is out, one background probe asks it again. */
export const probeInterval = Duration.seconds(5)

// How long the stop waits for commands in flight before the Redis client is destroyed: node-redis' close() waits for
// their answers, which during an outage never come (a SIGTERM would never finish).
const closeTimeout = Duration.seconds(2)

// The key the probe counts under; its budget is never spent.
const probeKey = "~probe"

/** The outcome of counting one request. */
export interface RateLimitDecision {
  readonly allowed: boolean
  readonly limit: number
  /** Requests left in the current window (0 when refused). */
  readonly remaining: number
  /** Whole seconds until the window closes and the whole budget is back. */
  readonly resetSeconds: number
  /** Whole seconds (≥ 1) to wait before retrying; meaningful when refused. */
  readonly retryAfterSeconds: number
}

const wholeSeconds = (duration: Duration.Duration) => Math.ceil(Duration.toMillis(duration) / 1000)

/** The `RateLimit-*` headers every counted response carries. */
export const headers = (decision: RateLimitDecision): Record<string, string> => ({
  "ratelimit-limit": String(decision.limit),
  "ratelimit-remaining": String(decision.remaining),
  "ratelimit-reset": String(decision.resetSeconds)
})

const consumeWith = (limiter: RateLimiter.RateLimiter, key: string, limit: number) =>
  limiter.consume({ key, limit, window, algorithm: "fixed-window", onExceeded: "fail" }).pipe(
    Effect.map(
      (result): RateLimitDecision => ({
        allowed: true,
        limit,
        remaining: Math.max(0, result.remaining),
        resetSeconds: wholeSeconds(result.resetAfter),
        retryAfterSeconds: 0
      })
    ),
    Effect.catchReason("RateLimiterError", "RateLimitExceeded", (exceeded) => {
      const retryAfterSeconds = Math.max(1, wholeSeconds(exceeded.retryAfter))
      return Effect.succeed<RateLimitDecision>({
        allowed: false,
        limit,
        remaining: 0,
        resetSeconds: retryAfterSeconds,
        retryAfterSeconds
      })
    })
  )

// How long a start waits for Redis to answer a PING. node-redis' connect waits for its handshake without a bound, so a
// Redis that accepts connections and never answers (a stalled host) would hold the start for ever.
const startTimeout = Duration.seconds(5)

/**
 * Whether the Redis at `url` answers one PING (any reply: an error such as `NOAUTH` is an answer too) within
 * `timeout`; fails with the socket's error or a timeout otherwise.
 */
const answersPing = (url: Redacted.Redacted<string>, timeout: Duration.Duration) =>
  Effect.callback<void, Error>((resume) => {
    const parsed = URL.parse(Redacted.value(url))
    if (parsed === null) {
      resume(Effect.fail(new Error("the URL does not parse")))
      return
    }
    const host = parsed.hostname.replace(/^\[|\]$/g, "")
    const options = { host, port: Number(parsed.port || 6379) }
    const socket =
      parsed.protocol === "rediss:"
        ? tls.connect({ ...options, ...(net.isIP(host) === 0 ? { servername: host } : {}) })
        : net.connect(options)
    let settled = false
    const settle = (outcome: Effect.Effect<void, Error>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resume(outcome)
    }
    // A deadline for the whole exchange, not the socket's idle timeout, which a peer trickling bytes would renew.
    const timer = setTimeout(
      () => settle(Effect.fail(new Error(`no answer within ${Duration.format(timeout)}`))),
      Duration.toMillis(timeout)
    )
    socket.once(parsed.protocol === "rediss:" ? "secureConnect" : "connect", () => socket.write("PING\r\n"))
    socket.once("data", () => settle(Effect.void))
    socket.once("error", (error) => settle(Effect.fail(error)))
    return Effect.sync(() => {
      clearTimeout(timer)
      socket.destroy()
    })
  })

/** Redis did not answer at start. */
export class RedisUnavailable extends Error {
  override readonly name = "RedisUnavailable"
}

/** `redis://host:port` of the URL, without credentials; the URL's scheme alone when it does not parse. */
const address = (url: Redacted.Redacted<string>) => {
  const parsed = URL.parse(Redacted.value(url))
  return parsed === null ? "an unparsable URL" : `${parsed.protocol}//${parsed.host}`
}

/** The innermost message of a failure (node-redis wraps the socket error). */
const causeMessage = (error: unknown): string => {
  let current: unknown = error
  for (let depth = 0; depth < 5; depth++) {
    const inner = typeof current === "object" && current !== null && "cause" in current ? current.cause : undefined
    if (inner === undefined || inner === null) break
    current = inner
  }
  if (current instanceof AggregateError && current.errors.length > 0) return causeMessage(current.errors[0])
  if (current instanceof Error) return current.message || current.name
  return String(current)
}

const describe = (url: Redacted.Redacted<string>, error: unknown) =>
  `cannot connect to Redis at KASSA_REDIS_URL (${address(url)}): ${causeMessage(error)}. ` +
  "Start Redis, or unset KASSA_REDIS_URL to count the rate limit in this process."

/**
 * A finalizer that runs before the client's own close (added after it, so run first): close, bounded by
 * {@link closeTimeout}, then destroy — which rejects what is still in flight and lets the client's close end at once.
 */
const boundedClose = (service: typeof NodeRedis) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const { client } = yield* service
      yield* Effect.addFinalizer(() =>
        Effect.promise(() => client.close()).pipe(
          Effect.timeout(closeTimeout),
          Effect.ignoreCause,
          Effect.ensuring(Effect.sync(() => client.destroy()))
        )
      )
    })
  )

export class RateLimit extends Context.Service<
  RateLimit,
  {
    /** Counts one request of the key (its id, never the key) against a budget of `limit` per {@link window}. */
    readonly consume: (key: string, limit: number) => Effect.Effect<RateLimitDecision>
  }
>()("@kassa/server/auth/RateLimit") {
  /**
   * Over the given `RateLimiterStore`, failing open to a count in this process behind a circuit breaker (see the
   * module's comment): the limit then holds per process until the store is back, and no request fails or waits
   * because of the limiter, beyond the one that finds the outage.
   */
  static readonly layerStoreWith = (options: {
    readonly probeInterval: Duration.Duration
  }): Layer.Layer<RateLimit, never, RateLimiter.RateLimiterStore> =>
    Layer.effect(
      RateLimit,
      Effect.gen(function* () {
        const shared = yield* RateLimiter.make
        const local = yield* RateLimiter.make.pipe(Effect.provide(RateLimiter.layerStoreMemory))
        const countLocally = (key: string, limit: number) =>
          // The memory store cannot fail.
          consumeWith(local, key, limit).pipe(Effect.orDie)
        const askStore = (key: string, limit: number) =>
          consumeWith(shared, key, limit).pipe(Effect.timeout(storeTimeout))
        const interval = Duration.toMillis(options.probeInterval)
        // The breaker: closed while `openSince` is undefined. One process-wide state, read and written synchronously.
        const breaker: { openSince: number | undefined; nextProbe: number; probing: boolean } = {
          openSince: undefined,
          nextProbe: 0,
          probing: false
        }

        const open = (error: unknown) =>
          Effect.gen(function* () {
            if (breaker.openSince !== undefined) return
            const now = yield* Clock.currentTimeMillis
            breaker.openSince = now
            breaker.nextProbe = now + interval
            yield* Effect.logWarning(
              "Rate limit store (Redis) unavailable: counting requests in this process until it answers again",
              error
            )
          })

        const probe = Effect.gen(function* () {
          const answered = yield* askStore(probeKey, 1_000_000).pipe(Effect.isSuccess)
          const now = yield* Clock.currentTimeMillis
          if (answered && breaker.openSince !== undefined) {
            const seconds = Math.round((now - breaker.openSince) / 1000)
            breaker.openSince = undefined
            yield* Effect.logWarning(`Rate limit store (Redis) answers again after ${seconds} s: counting in Redis`)
          } else {
            breaker.nextProbe = now + interval
          }
        }).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              breaker.probing = false
            })
          )
        )

        const consume = Effect.fnUntraced(function* (key: string, limit: number) {
          if (breaker.openSince === undefined) {
            return yield* askStore(key, limit).pipe(
              Effect.catch((error) => open(error).pipe(Effect.andThen(countLocally(key, limit))))
            )
          }
          const now = yield* Clock.currentTimeMillis
          if (!breaker.probing && now >= breaker.nextProbe) {
            breaker.probing = true
            yield* Effect.forkDetach(probe)
          }
          return yield* countLocally(key, limit)
        })
        return RateLimit.of({ consume })
      })
    )

  /** Over the given `RateLimiterStore`, probing a failed store every {@link probeInterval}. */
  static readonly layerStore: Layer.Layer<RateLimit, never, RateLimiter.RateLimiterStore> = RateLimit.layerStoreWith({
    probeInterval
  })

  /**
   * Counted in this process. The memory store answers at once and cannot fail, so there is no timeout and no
   * fallback around it: each would fork a fiber and arm a timer on every request.
   */
  static readonly layerMemory: Layer.Layer<RateLimit> = Layer.effect(
    RateLimit,
    Effect.gen(function* () {
      const limiter = yield* RateLimiter.make
      return RateLimit.of({ consume: (key, limit) => consumeWith(limiter, key, limit).pipe(Effect.orDie) })
    })
  ).pipe(Layer.provide(RateLimiter.layerStoreMemory))

  /**
   * Shared by every process using the same Redis and prefix. Refuses to start when Redis does not answer a PING
   * within 5 s, with a message naming `KASSA_REDIS_URL`, its address (never its password) and the cause. Its client's
   * close at the stop is bounded (see {@link boundedClose}).
   */
  static readonly layerRedis = (options: {
    readonly url: Redacted.Redacted<string>
    readonly prefix?: string | undefined
    readonly probeInterval?: Duration.Duration | undefined
    readonly startTimeout?: Duration.Duration | undefined
  }): Layer.Layer<RateLimit> =>
    Layer.unwrap(
      answersPing(options.url, options.startTimeout ?? startTimeout).pipe(
        Effect.mapError((error) => new RedisUnavailable(describe(options.url, error))),
        Effect.orDie,
        // The Redis client (node-redis) is loaded only when a Redis URL is set: about 11 MB a process otherwise.
        Effect.andThen(Effect.promise(() => import("@effect/platform-node/NodeRedis"))),
        Effect.map((NodeRedis) =>
          RateLimit.layerStoreWith({ probeInterval: options.probeInterval ?? probeInterval }).pipe(
            Layer.provide(RateLimiter.layerStoreRedis({ prefix: options.prefix ?? defaultRedisPrefix })),
            Layer.provide(
              boundedClose(NodeRedis.NodeRedis).pipe(
                Layer.provideMerge(NodeRedis.layer({ url: Redacted.value(options.url) })),
                // The client warns on every failed reconnect (every 2 s of an outage); the breaker above logs the
                // outage once and its end.
                Layer.provide(Layer.succeed(References.MinimumLogLevel, "Error"))
              )
            ),
            Layer.catch((error) => Layer.effectContext(Effect.die(new RedisUnavailable(describe(options.url, error)))))
          )
        )
      )
    )

  /** Redis when `KASSA_REDIS_URL` is set, in process otherwise. */
  static readonly layer: Layer.Layer<RateLimit, never, ServerConfig> = Layer.unwrap(
    Effect.gen(function* () {
      const { redisUrl } = yield* ServerConfig
      return Option.match(redisUrl, {
        onNone: () => RateLimit.layerMemory,
        onSome: (url) => RateLimit.layerRedis({ url })
      })
    })
  )
}
