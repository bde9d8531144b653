#!/usr/bin/env node
/**
 * `kassa …`: see `kassa --help`.
 *
 * Every command starts a process, so start-up is kept short: the CLI imports effect's modules one by one
 * (`effect/Effect`, not the `effect` index, which loads all ~300), and what only some commands use is imported
 * inside them (the server in `serve`, the SDK in the merchant commands, password generation in `admin users`).
 *
 * This module first checks the Node.js version, importing nothing: on an older Node a static import of something it
 * lacks (`enableCompileCache` of `node:module`, Node 22.1) would be a SyntaxError before any line ran.
 */

/** The oldest Node.js the CLI is tested on: `engines.node` of package.json (a test keeps the two equal). */
const minimumNode = "24.11.0"

// Plain JavaScript, no types: the test runs this file as it is under Node 20, which cannot strip them.
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number)
const [needMajor = 0, needMinor = 0] = minimumNode.split(".").map(Number)

if (major < needMajor || (major === needMajor && minor < needMinor)) {
  process.stderr.write(`kassa needs Node.js ≥ ${minimumNode}; this is Node.js ${process.version}.\n`)
  process.exitCode = 1
} else {
  // V8 keeps the compiled code of the modules a command loads (in the OS temp directory; NODE_COMPILE_CACHE moves it,
  // NODE_DISABLE_COMPILE_CACHE turns it off), so later starts skip compiling them: about a third of a start. It
  // applies only to modules loaded after this call, hence the command in its own module, imported here.
  const { enableCompileCache } = await import("node:module")
  enableCompileCache()
  await import("./Run.ts")
}
