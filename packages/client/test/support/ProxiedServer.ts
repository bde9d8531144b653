/**
 * The SDK suites' fixture: the real server (PGlite) with the fault-injecting proxy in front and one application, started
 * before a file's tests and closed after them. Read the fields inside tests (they are set once `beforeAll` ran).
 */
import { afterAll, beforeAll } from "vitest"
import { type RunningServer, startServer } from "../../../server/test/support/TestServer.ts"
import { type FaultProxy, startFaultProxy } from "./FaultProxy.ts"

export interface ProxiedServer {
  readonly server: RunningServer
  readonly proxy: FaultProxy
  readonly testKey: string
}

export const useProxiedServer = (): ProxiedServer => {
  const state = {} as { server: RunningServer; proxy: FaultProxy; testKey: string }
  beforeAll(async () => {
    state.server = await startServer("pglite")
    state.proxy = await startFaultProxy(state.server.baseUrl)
    state.testKey = (await state.server.createApplication()).testKey
  })
  afterAll(async () => {
    await state.proxy.close()
    await state.server.close()
  })
  return state
}
