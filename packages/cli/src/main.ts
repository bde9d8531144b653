#!/usr/bin/env node
/**
 * `kassa …`: see `kassa --help`.
 *
 * Every command starts a process, so start-up is kept short: the CLI imports effect's modules one by one
 * (`effect/Effect`, not the `effect` index, which loads all ~300), and what only some commands use is imported
 * inside them (the server in `serve`, the SDK in the merchant commands, password generation in `admin users`).
 */
import { enableCompileCache } from "node:module"

// V8 keeps the compiled code of the modules a command loads (in the OS temp directory; NODE_COMPILE_CACHE moves it,
// NODE_DISABLE_COMPILE_CACHE turns it off), so later starts skip compiling them: about a third of a start. It
// applies only to modules loaded after this call, hence the command in its own module, imported here.
enableCompileCache()
await import("./Run.ts")
