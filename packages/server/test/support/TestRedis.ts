/**
 * The Redis the tests use: KASSA_TEST_REDIS_URL, else the local one. As with PostgreSQL in the harness, the Redis
 * tests run where it answers ({@link redisReachable}). {@link startRedisProxy} puts a FreezableProxy in front of it,
 * for a Redis that goes silent or down under a test.
 */
import { type FreezableProxy, startFreezableProxy } from "./FreezableProxy.ts"
import { reachable } from "./TestServer.ts"

export const redisUrl = process.env.KASSA_TEST_REDIS_URL ?? "redis://127.0.0.1:6379"

export const redisReachable = await reachable(redisUrl, 6379)

/** A proxy in front of the test Redis, with the URL (`redis://`, or another scheme) that reaches Redis through it. */
export const startRedisProxy = async (): Promise<FreezableProxy & { readonly url: (scheme?: string) => string }> => {
  const target = new URL(redisUrl)
  const proxy = await startFreezableProxy({ host: target.hostname, port: Number(target.port || 6379) })
  return { ...proxy, url: (scheme = "redis") => `${scheme}://127.0.0.1:${proxy.port}` }
}
