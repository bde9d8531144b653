export { ServerConfig } from "./config/ServerConfig.ts"
export * as KassaServer from "./KassaServer.ts"
export { ListenError } from "./KassaServer.ts"
export * as Launch from "./Launch.ts"
