/**
 * The operator API's contract (decisions §8): one definition, from which the server's routes, `kassa admin`'s typed
 * client and the document at `/admin/api/v1/openapi.json` derive.
 */
import { assert, describe, it } from "@effect/vitest"
import { Validator } from "@seriousme/openapi-schema-validator"
import { OpenApi } from "effect/http-api"
import { OperatorApi, OperatorSettings } from "../src/index.ts"

const spec = OpenApi.fromApi(OperatorApi.OperatorApi)

describe("OperatorApi", () => {
  it("derives a valid OpenAPI 3.1 document", async () => {
    const result = await new Validator().validate(JSON.parse(JSON.stringify(spec)))
    assert.deepStrictEqual(result.errors, undefined)
    assert.strictEqual(spec.info.title, "Kassa operator API")
  })

  it("mounts every operation under the prefix, behind the admin token, never under the merchant API", () => {
    const paths = Object.keys(spec.paths)
    assert.isAbove(paths.length, 10)
    for (const path of paths) {
      assert.isTrue(path.startsWith(`${OperatorApi.operatorPrefix}/`), path)
      for (const operation of Object.values(spec.paths[path] ?? {})) {
        if (typeof operation !== "object" || operation === null || !("security" in operation)) continue
        assert.deepStrictEqual(operation.security, [{ bearer: [] }], path)
        assert.property(operation.responses, "401", path)
      }
    }
    assert.strictEqual(spec.components.securitySchemes.bearer?.type, "http")
  })

  it("takes every setting of the catalogue in the application bodies, described", () => {
    for (const body of ["CreateApplicationBody", "UpdateApplicationBody"]) {
      const schema = spec.components.schemas[body] as { properties: Record<string, { description?: string }> }
      assert.deepStrictEqual(Object.keys(schema.properties).sort(), [...OperatorSettings.names].sort())
      for (const name of OperatorSettings.names) {
        if (name === "name") continue
        assert.strictEqual(schema.properties[name]?.description, OperatorSettings.settings[name].description, name)
      }
    }
  })
})
