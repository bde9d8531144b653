/** @kassa/cli: the `kassa` command (`bin`), and its command tree for embedding or testing. */
export { exitCodeOf, kassa, version } from "./Cli.ts"
export { CommandFailure, ExitCode, ReportedFailure } from "./Output.ts"
