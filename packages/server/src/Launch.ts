/**
 * The server as an operator runs it — `node dist/main.js` and `kassa serve` alike: settings from the environment
 * (or whatever ConfigProvider the caller gives), logging for the environment, and on a first start outside
 * production the demo application and its one-time banner once the server listens.
 */
import { Layer } from "effect"
import * as Logging from "./config/Logging.ts"
import { ServerConfig } from "./config/ServerConfig.ts"
import * as KassaServer from "./KassaServer.ts"
import * as DemoApplication from "./seed/DemoApplication.ts"

export const layer = DemoApplication.layer.pipe(
  Layer.provide(KassaServer.layer),
  Layer.provide(Logging.layer),
  Layer.provide(ServerConfig.layer)
)
