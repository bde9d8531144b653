export * as Cluster from "./Cluster.ts"
export { ServerConfig } from "./config/ServerConfig.ts"
// Errors a start can stop with: the CLI's commands name them in their declared types.
export { SchemaNotCurrent } from "./database/Database.ts"
export * as KassaServer from "./KassaServer.ts"
export { ListenError } from "./KassaServer.ts"
export * as Launch from "./Launch.ts"
