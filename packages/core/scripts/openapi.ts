/**
 * Writes the OpenAPI 3.1 document of the merchant API to `packages/core/openapi.json`, or to stdout with `--stdout`
 * (`--operator --stdout`: the operator API's, which the server serves at `/admin/api/v1/openapi.json`). The document
 * is generated from `MerchantApi`, the same definition the server serves at `/openapi.json`; the test
 * `OpenApi.test.ts` fails when the committed file differs from what this writes, and `OpenApiLint.test.ts` lints
 * both documents with Redocly.
 *
 * Run with `pnpm --filter @kassa/core run openapi`.
 */
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { OpenApi } from "effect/http-api"
import { MerchantApi } from "../src/api/MerchantApi.ts"
import { OperatorApi } from "../src/api/OperatorApi.ts"

const target = fileURLToPath(new URL("../openapi.json", import.meta.url))

const spec = process.argv.includes("--operator") ? OpenApi.fromApi(OperatorApi) : OpenApi.fromApi(MerchantApi)
const document = `${JSON.stringify(spec, null, 2)}\n`

if (process.argv.includes("--stdout")) {
  process.stdout.write(document)
} else if (process.argv.includes("--operator")) {
  console.error("the operator document is not committed: use --operator --stdout")
  process.exitCode = 1
} else {
  writeFileSync(target, document)
  console.log(`wrote ${target}`)
}
