/**
 * Stripe's own example objects (../FakeStripe.fixtures.json: stripe/openapi fixtures3, MIT, see
 * ../FakeStripe.fixtures.LICENSE), each object the fake makes starts from one; and ids shaped like Stripe's.
 */
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { clone, type JsonObject } from "./Json.ts"

const fixtures = (
  JSON.parse(readFileSync(join(import.meta.dirname, "..", "FakeStripe.fixtures.json"), "utf8")) as {
    resources: Record<string, JsonObject>
  }
).resources

export const fixture = (name: string): JsonObject => {
  const found = fixtures[name]
  if (found === undefined) throw new Error(`no Stripe fixture ${name}`)
  return clone(found)
}

export const randomId = (prefix: string) => `${prefix}_${randomBytes(18).toString("base64url").replace(/[-_]/g, "x")}`
