/**
 * What a server allocates under load, by function or by file (issue 23): connects to a Node process started with
 * `--inspect`, samples every allocation for a few seconds — objects the young and old generations collected
 * included, which is what a request's garbage is — and prints each site's share of the bytes. Figures, not a test.
 *
 * Usage, with `pnpm bench` running Kassa alone under load:
 *   KASSA_BENCH_ONLY=kassa KASSA_BENCH_SCENARIOS="GET saturation" KASSA_BENCH_SECONDS=25 KASSA_BENCH_ROUNDS=1 \
 *     KASSA_BENCH_NODE_FLAGS="<npm start's flags> \
 *     --inspect=127.0.0.1:9229" node --conditions=@kassa/source bench/api.ts &
 *   sleep 15; node bench/allocations.ts 9229 6 files     (port, seconds, `files` or `functions`[, `promoted`])
 * Divide the total by the round's requests (its req/s × seconds) for the bytes a request allocates. With `promoted`,
 * objects the young generation collected are left out: what remains was promoted to the old generation (where only
 * a full collection frees it) or is still alive — the garbage that drives mark-compacts (issue 23). The profiler
 * attached changes the figures (a GET read ~15 KB this way against the 5 KB `--trace-gc-nvp` counts without it):
 * read the sites' shares, not the total.
 */
interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}
interface ProfileNode {
  readonly callFrame: CallFrame
  readonly selfSize: number
  readonly children: ReadonlyArray<ProfileNode>
}

const [port = "9229", seconds = "5", by = "files", which = "all"] = process.argv.slice(2)
const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
  webSocketDebuggerUrl: string
}>
const socket = new WebSocket(targets[0]?.webSocketDebuggerUrl ?? "")
await new Promise((resolve) => socket.addEventListener("open", resolve))
let next = 0
const pending = new Map<number, (result: unknown) => void>()
socket.addEventListener("message", (event) => {
  const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown }
  if (message.id !== undefined) pending.get(message.id)?.(message.result)
})
const send = (method: string, params: Record<string, unknown> = {}) =>
  new Promise<unknown>((resolve) => {
    const id = ++next
    pending.set(id, resolve)
    socket.send(JSON.stringify({ id, method, params }))
  })

await send("HeapProfiler.enable")
await send("HeapProfiler.startSampling", {
  samplingInterval: 4096,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: which !== "promoted"
})
await new Promise((resolve) => setTimeout(resolve, Number(seconds) * 1000))
const { profile } = (await send("HeapProfiler.stopSampling")) as { profile: { head: ProfileNode } }
socket.close()

const where = (frame: CallFrame) =>
  frame.url
    .replace(/^.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, "")
    .replace(/^file:\/\/.*\/packages\/server\/dist\//, "kassa/")
const sites = new Map<string, number>()
let total = 0
const walk = (node: ProfileNode) => {
  const site =
    by === "functions"
      ? `${node.callFrame.functionName || "(anonymous)"} ${where(node.callFrame)}:${node.callFrame.lineNumber + 1}`
      : where(node.callFrame) || "(native)"
  sites.set(site, (sites.get(site) ?? 0) + node.selfSize)
  total += node.selfSize
  for (const child of node.children) walk(child)
}
walk(profile.head)
console.log(
  `${(total / 1e6).toFixed(1)} MB ${which === "promoted" ? "not collected young" : "allocated"} in ${seconds} s`
)
for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
  console.log(`${((100 * bytes) / total).toFixed(1).padStart(5)} %  ${site}`)
}
