import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SecureRandom } from "effect/crypto"
import * as Credentials from "../src/dashboard/Credentials.ts"

const counting = () => {
  let next = 0
  return SecureRandom.make((size) => Uint8Array.from({ length: size }, () => next++ & 0xff))
}

describe("Credentials", () => {
  it.effect("generatePassword takes 20 base62 characters from SecureRandom", () =>
    Effect.gen(function* () {
      assert.strictEqual(yield* Credentials.generatePassword, "0123456789ABCDEFGHIJ")
    }).pipe(Effect.provideService(SecureRandom.SecureRandom, counting()))
  )

  it.effect("generated passwords satisfy the password policy and differ", () =>
    Effect.gen(function* () {
      const passwords = yield* Effect.replicateEffect(Credentials.generatePassword, 200)
      for (const password of passwords) {
        assert.match(password, /^[0-9A-Za-z]{20}$/)
        assert.isTrue(Schema.is(Credentials.Password)(password))
      }
      assert.strictEqual(new Set(passwords).size, 200)
    }).pipe(Effect.provide(SecureRandom.layerWebCrypto))
  )
})
