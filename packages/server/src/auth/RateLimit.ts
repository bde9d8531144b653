/**
 * The per-key request budget of the merchant API (decisions §5): `rate_limit_per_minute` requests (120 unless the
 * operator set another) per 60 s window, counted by effect's `RateLimiter`. The counter lives in Redis when
 * `KASSA_REDIS_URL` is set, so every server process shares it, and in this process otherwise.
 *
 * Algorithm: effect's "fixed-window" counter. The first request opens a window; each accepted request adds
 * `60 s / limit` to its lifetime, so a full budget spent at once keeps the window open 60 s and a slower caller's
 * window closes early. Refused requests do not lengthen it: once the window closes the whole budget is back, which is
 * what `RateLimit-Reset` and `Retry-After` report.
 */
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { RateLimiter } from "effect/persistence"
import { ServerConfig } from "../config/ServerConfig.ts"

/** The window every limit counts over; the application setting is per minute. */
export const window = Duration.seconds(60)

/** Redis keys are `<prefix><key id>`. */
export const defaultRedisPrefix = "kassa:ratelimit:"

// A shared store that does not answer quickly is treated as failed: requests must not hang on it.
const storeTimeout = Duration.millis(500)

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

export class RateLimit extends Context.Service<
  RateLimit,
  {
    /** Counts one request of the key (its id, never the key) against a budget of `limit` per {@link window}. */
    readonly consume: (key: string, limit: number) => Effect.Effect<RateLimitDecision>
  }
>()("@kassa/server/auth/RateLimit") {
  /**
   * Over the given `RateLimiterStore`. When the store fails or does not answer (Redis down), the request is counted
   * in this process instead: the limit then holds per process until the store is back, and no request fails or
   * waits because of the limiter.
   */
  static readonly layerStore: Layer.Layer<RateLimit, never, RateLimiter.RateLimiterStore> = Layer.effect(
    RateLimit,
    Effect.gen(function* () {
      const shared = yield* RateLimiter.make
      const local = yield* RateLimiter.make.pipe(Effect.provide(RateLimiter.layerStoreMemory))
      const consume = Effect.fnUntraced(function* (key: string, limit: number) {
        return yield* consumeWith(shared, key, limit).pipe(
          Effect.timeout(storeTimeout),
          Effect.catch((error) =>
            Effect.logWarning("Rate limit store failed; counting this request in this process", error).pipe(
              Effect.andThen(consumeWith(local, key, limit)),
              // The memory store cannot fail.
              Effect.orDie
            )
          )
        )
      })
      return RateLimit.of({ consume })
    })
  )

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

  /** Shared by every process using the same Redis and prefix. Refuses to start when Redis does not answer. */
  static readonly layerRedis = (options: {
    readonly url: Redacted.Redacted<string>
    readonly prefix?: string | undefined
  }): Layer.Layer<RateLimit> =>
    // The Redis client (node-redis) is loaded only when a Redis URL is set: about 11 MB a process otherwise.
    Layer.unwrap(
      Effect.promise(() => import("@effect/platform-node/NodeRedis")).pipe(
        Effect.map((NodeRedis) =>
          RateLimit.layerStore.pipe(
            Layer.provide(RateLimiter.layerStoreRedis({ prefix: options.prefix ?? defaultRedisPrefix })),
            Layer.provide(NodeRedis.layer({ url: Redacted.value(options.url) })),
            Layer.orDie
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
