#!/usr/bin/env node
/** `node dist/main.js`: the reference server with settings from the environment (decisions §9). */
import { NodeRuntime } from "@effect/platform-node"
import { Layer } from "effect"
import { ServerConfig } from "./config/ServerConfig.ts"
import * as KassaServer from "./KassaServer.ts"

Layer.launch(KassaServer.layer.pipe(Layer.provide(ServerConfig.layer))).pipe(NodeRuntime.runMain)
