/**
 * Writes the OpenAPI 3.1 document of the merchant API to `packages/core/openapi.json`, or to stdout with `--stdout`.
 * The document is generated from `MerchantApi`, the same definition the server serves at `/openapi.json`; the test
 * `OpenApi.test.ts` fails when the committed file differs from what this writes.
 *
 * Run with `pnpm --filter @kassa/core run openapi`.
 */
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { OpenApi } from "effect/http-api"
import { MerchantApi } from "../src/api/MerchantApi.ts"

const target = fileURLToPath(new URL("../openapi.json", import.meta.url))

const document = `${JSON.stringify(OpenApi.fromApi(MerchantApi), null, 2)}\n`

if (process.argv.includes("--stdout")) {
  process.stdout.write(document)
} else {
  writeFileSync(target, document)
  console.log(`wrote ${target}`)
}
