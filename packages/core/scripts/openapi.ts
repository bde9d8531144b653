/**
 * Writes the OpenAPI 3.1 documents of the merchant API (`packages/core/openapi.json`, served at `/openapi.json`) and
 * of the operator API (`packages/core/openapi-operator.json`, served at `/admin/api/v1/openapi.json`), or one of them
 * to stdout with `--stdout` (`--operator --stdout`: the operator's). Both are generated from the contracts
 * (`MerchantApi`, `OperatorApi`) the server serves; `OpenApi.test.ts` fails when a committed file differs from what
 * this writes, and `OpenApiLint.test.ts` lints both with Redocly.
 *
 * Run with `pnpm --filter @kassa/core run openapi`.
 */
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { OpenApi } from "effect/http-api"
import { MerchantApi } from "../src/api/MerchantApi.ts"
import { OperatorApi } from "../src/api/OperatorApi.ts"

const text = (spec: OpenApi.OpenAPISpec) => `${JSON.stringify(spec, null, 2)}\n`
const merchant = () => text(OpenApi.fromApi(MerchantApi))
const operator = () => text(OpenApi.fromApi(OperatorApi))

if (process.argv.includes("--stdout")) {
  process.stdout.write(process.argv.includes("--operator") ? operator() : merchant())
} else {
  for (const [name, document] of [
    ["../openapi.json", merchant()],
    ["../openapi-operator.json", operator()]
  ] as const) {
    const file = fileURLToPath(new URL(name, import.meta.url))
    writeFileSync(file, document)
    console.log(`wrote ${file}`)
  }
}
