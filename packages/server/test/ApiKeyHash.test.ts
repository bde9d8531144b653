/** The server's fast API-key hash must be the core's `ApiKey.hash`: stored hashes are looked up with it. */
import { NodeCrypto } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ApiKey, Mode } from "@kassa/core"
import { Effect, Redacted, Schema } from "effect"
import { keyHasher } from "../src/applications/ApiKeyRepository.ts"

describe("keyHasher", () => {
  it.effect.prop(
    "gives what ApiKey.hash gives",
    [Mode.Mode, Schema.String.check(Schema.isMinLength(1))],
    ([mode, secret]) =>
      Effect.gen(function* () {
        const key = yield* ApiKey.generate(mode)
        assert.strictEqual(keyHasher(Redacted.make(secret))(key), yield* ApiKey.hash(key, secret))
      }).pipe(Effect.provide(NodeCrypto.layer))
  )
})
