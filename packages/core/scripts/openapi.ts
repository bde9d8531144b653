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

const documents = {
  merchant: { file: fileURLToPath(new URL("../openapi.json", import.meta.url)), api: MerchantApi },
  operator: { file: fileURLToPath(new URL("../openapi-operator.json", import.meta.url)), api: OperatorApi }
} as const

const text = (api: typeof MerchantApi | typeof OperatorApi) => `${JSON.stringify(OpenApi.fromApi(api), null, 2)}\n`

if (process.argv.includes("--stdout")) {
  process.stdout.write(text(process.argv.includes("--operator") ? OperatorApi : MerchantApi))
} else {
  for (const { file, api } of Object.values(documents)) {
    writeFileSync(file, text(api))
    console.log(`wrote ${file}`)
  }
}
