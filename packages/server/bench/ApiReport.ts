/**
 * What bench/api.ts prints from its rounds (issue 23): per scenario and server the medians of the rounds, with CPU
 * per request first (the figure other load on the machine moves least), the server's CPU share of the round beside
 * its throughput (1.00 core is a saturated single-threaded server: a throughput ratio means little unless both
 * servers show it), and every ratio against the baseline and the floor taken round by round (paired: both servers
 * ran within seconds of each other) and then the median. Then the targets, PASS or MISS each.
 */

/**
 * The median, the mean of the two middle values for an even count (BenchSupport's takes the lower one: over 4 or 6
 * paired ratios that leans every A/B toward "faster"; an A/A run of one build against itself read 0.89× so).
 */
export const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length / 2
  return sorted.length % 2 === 1
    ? (sorted[Math.floor(middle)] ?? Number.NaN)
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2
}

/** One server's figures for one round of one scenario. */
export interface Figures {
  readonly rps: number
  /** The server's own CPU time per answered request, in µs. */
  readonly cpu: number
  /** The server's CPU seconds over the round's wall seconds: 1.00 is one whole core. */
  readonly cores: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  /** Peak RSS over the round, MB. */
  readonly rss: number
  /** The machine's 1-minute load average at the round's end. */
  readonly load: number
}

/** The servers a run can have: Kassa, the baseline (or another Kassa build in its place), the floor. */
export type Who = "kassa" | "base" | "floor"

export type Rounds = ReadonlyMap<string, ReadonlyArray<Figures>>

const key = (who: Who, scenario: string) => `${who} ${scenario}`

const figure = (rounds: Rounds, who: Who, scenario: string, pick: (figures: Figures) => number) =>
  median((rounds.get(key(who, scenario)) ?? []).map(pick))

/** `who`'s figure divided by `against`'s of the same round, round by round. */
const pairedRatios = (rounds: Rounds, who: Who, against: Who, scenario: string, pick: (figures: Figures) => number) => {
  const mine = rounds.get(key(who, scenario)) ?? []
  const theirs = rounds.get(key(against, scenario)) ?? []
  return mine.flatMap((run, index) => (theirs[index] === undefined ? [] : [pick(run) / pick(theirs[index])]))
}

/** The median over the rounds of `who`'s figure divided by `against`'s of the same round. */
export const pairedRatio = (
  rounds: Rounds,
  who: Who,
  against: Who,
  scenario: string,
  pick: (figures: Figures) => number
) => median(pairedRatios(rounds, who, against, scenario, pick))

/** `0.86× 5/6`: the paired ratio and in how many rounds it was below 1 (an A/B's "k of n rounds lower"). */
const pairedCell = (rounds: Rounds, who: Who, against: Who, scenario: string, pick: (figures: Figures) => number) => {
  const ratios = pairedRatios(rounds, who, against, scenario, pick)
  const ratio = median(ratios)
  if (!Number.isFinite(ratio)) return ""
  return `${ratio.toFixed(2)}× ${ratios.filter((value) => value < 1).length}/${ratios.length}`
}

/** Peak RSS of `who` over every round of every scenario (RSS under load), MB. */
export const peakRss = (rounds: Rounds, who: Who) =>
  Math.max(
    ...[...rounds.entries()]
      .filter(([name]) => name.startsWith(`${who} `))
      .flatMap(([, runs]) => runs.map((run) => run.rss))
  )

/** One table row per scenario and server. */
export const tableRows = (rounds: Rounds, servers: ReadonlyArray<Who>, scenarios: ReadonlyArray<string>) =>
  scenarios.flatMap((scenario) =>
    servers.map((who) => {
      const runs = rounds.get(key(who, scenario)) ?? []
      const versus = (against: Who, pick: (figures: Figures) => number) =>
        who === against || !servers.includes(against) ? "" : pairedCell(rounds, who, against, scenario, pick)
      return {
        scenario,
        server: who,
        "CPU µs/req": Math.round(figure(rounds, who, scenario, (run) => run.cpu)),
        "CPU ×base": versus("base", (run) => run.cpu),
        "CPU ×floor": versus("floor", (run) => run.cpu),
        cores: figure(rounds, who, scenario, (run) => run.cores).toFixed(2),
        "req/s": Math.round(figure(rounds, who, scenario, (run) => run.rps)),
        "req/s ×base": versus("base", (run) => run.rps),
        "p50/p99 ms": `${figure(rounds, who, scenario, (run) => run.p50)} / ${figure(rounds, who, scenario, (run) => run.p99)}`,
        "p99 ×base": versus("base", (run) => run.p99),
        "RSS MB": Math.round(Math.max(...runs.map((run) => run.rss))),
        errors: runs.reduce((sum, run) => sum + run.errors, 0),
        load: `${Math.min(...runs.map((run) => run.load)).toFixed(1)}–${Math.max(...runs.map((run) => run.load)).toFixed(1)}`
      }
    })
  )

/** The targets of issue 23 against the baseline (or what ran in its place: `base` names it), each with its figure and PASS or MISS (MISS when not measured). */
export const targets = (rounds: Rounds, scenarios: ReadonlyArray<string>, base = "baseline") => {
  const lines: Array<string> = []
  const check = (label: string, value: number, limit: number, unit: string) => {
    const verdict = Number.isFinite(value) && value <= limit ? "PASS" : "MISS"
    lines.push(
      `${verdict}  ${label}: ${Number.isFinite(value) ? value.toFixed(2) : "not measured"}${unit} (≤ ${limit}${unit})`
    )
  }
  const has = (scenario: string) => scenarios.includes(scenario)
  for (const [scenario, what] of [
    ["GET saturation", "GET"],
    ["POST saturation", "create"]
  ] as const) {
    if (has(scenario))
      check(
        `CPU per ${what} request, Kassa/${base}`,
        pairedRatio(rounds, "kassa", "base", scenario, (run) => run.cpu),
        2,
        "×"
      )
  }
  for (const [scenario, what] of [
    ["GET 500 req/s", "GET"],
    ["POST 500 req/s", "create"]
  ] as const) {
    if (has(scenario))
      check(
        `p99 of ${what} at 500 req/s, Kassa/${base}`,
        pairedRatio(rounds, "kassa", "base", scenario, (run) => run.p99),
        2,
        "×"
      )
  }
  check(`peak RSS under load, Kassa/${base}`, peakRss(rounds, "kassa") / peakRss(rounds, "base"), 1, "×")
  return lines
}
