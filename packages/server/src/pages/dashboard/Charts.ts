/**
 * Charts drawn on the server as inline SVG (issue 22 §3): no script, so the dashboards' Content-Security-Policy is
 * unchanged. Each chart is a `<figure>`: the drawing (`role="img"`, named by its `<title>` and `aria-label`), a legend
 * that names every colour in words (colour is never the only cue: the series keep the legend's order, and each bar
 * and point carries its day and figure as a tooltip), and a visible text summary as its caption, which is what a
 * screen reader reads. Pure: figures in, markup out; every label goes through `html`, so it is escaped; a series
 * with nothing in it draws an empty axis (no NaN, no division by zero).
 */
import { type Html, html } from "../Html.ts"

/** One series: a name for the legend, its colour (contrast of at least 3:1 on white), a figure per day. */
export interface Series {
  readonly name: string
  readonly colour: string
  readonly values: ReadonlyArray<number>
}

export interface ChartFrame {
  /** The chart's name (its `<title>`). */
  readonly title: string
  /** What the chart shows, in words: its caption and what a screen reader reads. */
  readonly summary: string | Html
  /** A label per position (days, `YYYY-MM-DD`). */
  readonly labels: ReadonlyArray<string>
  /** A figure as shown (axis, tooltips): `12`, `99.5%`, `€ 1,200.00`. */
  readonly format?: (value: number) => string
  /** Counts: the axis labels only whole figures (no "0.5 payments"). */
  readonly whole?: boolean
}

// Drawn for a column of about 420 px: the text stays readable (about 12 px) when the drawing is scaled down to it.
const width = 480
const height = 220
const left = 72
const right = 12
const top = 14
const bottom = 30
const fontSize = 15
const plotWidth = width - left - right
const plotHeight = height - top - bottom

/** A finite figure, else 0: a chart never draws NaN or Infinity. */
export const finite = (value: number): number => (Number.isFinite(value) ? value : 0)

/** The axis' top: the smallest 1, 2, 2.5 or 5 × 10ⁿ at or above `max` (1 for an empty series). */
export const niceMax = (max: number): number => {
  const value = finite(max)
  if (value <= 0) return 1
  const power = 10 ** Math.floor(Math.log10(value))
  const step = [1, 2, 2.5, 5, 10].find((factor) => factor * power >= value) ?? 10
  return step * power
}

/** Where `value` falls on an axis from 0 to `max`, from the plot's bottom (0) to its top (plotHeight). */
export const scale = (value: number, max: number): number =>
  max <= 0 ? 0 : Math.min(plotHeight, Math.max(0, (finite(value) / max) * plotHeight))

const coordinate = (value: number) => finite(value).toFixed(1)

/** `2026-03-07` as `7 Mar`; anything else as given. */
export const shortDay = (label: string): string => {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(label)
  if (match === null) return label
  const month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][
    Number(match[2]) - 1
  ]
  return month === undefined ? label : `${Number(match[3])} ${month}`
}

const plain = (value: number) => String(Math.round(finite(value) * 10) / 10)

/**
 * The grid lines and their figures (0, half, top; the half unlabelled when `whole` and it is not a whole figure),
 * and the first, middle and last labels under the plot.
 */
const axes = (labels: ReadonlyArray<string>, max: number, format: (value: number) => string, whole = false): Html => {
  const ticks = [0, max / 2, max].map((value) => {
    const y = top + plotHeight - scale(value, max)
    const label = whole && !Number.isInteger(value) ? "" : format(value)
    return html`<line x1="${left}" x2="${width - right}" y1="${coordinate(y)}" y2="${coordinate(y)}" stroke="#d5dbe5" stroke-width="1"/><text x="${left - 6}" y="${coordinate(y + 5)}" text-anchor="end" font-size="${fontSize}" fill="#5c677d">${label}</text>`
  })
  const step = labels.length === 0 ? 0 : plotWidth / labels.length
  const shown = [...new Set([0, Math.floor((labels.length - 1) / 2), labels.length - 1])].filter(
    (index) => index >= 0 && index < labels.length
  )
  const names = shown.map(
    (index) =>
      html`<text x="${coordinate(left + step * (index + 0.5))}" y="${height - 8}" text-anchor="${index === 0 ? "start" : index === labels.length - 1 ? "end" : "middle"}" font-size="${fontSize}" fill="#5c677d">${shortDay(labels[index] ?? "")}</text>`
  )
  return html`${ticks}${names}`
}

const legend = (series: ReadonlyArray<Pick<Series, "name" | "colour">>): Html =>
  html`<ul class="chart-legend" style="list-style:none;display:flex;flex-wrap:wrap;gap:4px 16px;margin:6px 0 0;padding:0;font-size:13px">${series.map(
    (entry) =>
      html`<li><span aria-hidden="true" style="display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px;background:${entry.colour}"></span>${entry.name}</li>`
  )}</ul>`

const figure = (frame: ChartFrame, drawing: Html, key: Html | ""): Html =>
  html`<figure class="chart" style="margin:0">
<svg role="img" aria-label="${frame.title}" viewBox="0 0 ${width} ${height}" width="100%" preserveAspectRatio="xMidYMid meet" style="display:block;max-width:100%;height:auto" xmlns="http://www.w3.org/2000/svg"><title>${frame.title}</title>${drawing}</svg>
${key}
<figcaption class="muted" style="margin-top:6px">${frame.summary}</figcaption>
</figure>`

/**
 * Bars per position, the series stacked in order (the first at the bottom); one series draws plain bars. The axis
 * runs from 0 to the largest stack, rounded up.
 */
export const stackedBars = (frame: ChartFrame & { readonly series: ReadonlyArray<Series> }): Html => {
  const format = frame.format ?? plain
  const totals = frame.labels.map((_, index) =>
    frame.series.reduce((sum, series) => sum + Math.max(0, finite(series.values[index] ?? 0)), 0)
  )
  const max = niceMax(Math.max(0, ...totals))
  const step = frame.labels.length === 0 ? 0 : plotWidth / frame.labels.length
  const barWidth = Math.max(1, step * 0.7)
  const bars = frame.labels.map((label, index) => {
    let base = 0
    return frame.series.map((series) => {
      const value = Math.max(0, finite(series.values[index] ?? 0))
      if (value === 0) return ""
      const y0 = scale(base, max)
      base += value
      const y1 = scale(base, max)
      const x = left + step * index + (step - barWidth) / 2
      return html`<rect x="${coordinate(x)}" y="${coordinate(top + plotHeight - y1)}" width="${coordinate(barWidth)}" height="${coordinate(Math.max(0.5, y1 - y0))}" fill="${series.colour}"><title>${shortDay(label)}: ${format(value)} ${series.name.toLowerCase()}</title></rect>`
    })
  })
  return figure(
    frame,
    html`${axes(frame.labels, max, format, frame.whole)}${bars}`,
    frame.series.length > 1 ? legend(frame.series) : ""
  )
}

/**
 * A line over positions, with a dot at each figure; `null` is a gap (a day with nothing to measure, such as a
 * conversion with no payment), never a zero. The axis runs from 0 to `max` (100 for a percentage) or the largest
 * figure, rounded up.
 */
export const line = (
  frame: ChartFrame & {
    readonly name: string
    readonly colour: string
    readonly values: ReadonlyArray<number | null>
    readonly max?: number
  }
): Html => {
  const format = frame.format ?? plain
  const figures = frame.values.flatMap((value) => (value === null || !Number.isFinite(value) ? [] : [value]))
  const max = frame.max !== undefined && frame.max > 0 ? frame.max : niceMax(Math.max(0, ...figures))
  const step = frame.labels.length === 0 ? 0 : plotWidth / frame.labels.length
  const points = frame.labels.map((label, index) => {
    const value = frame.values[index]
    if (value === null || value === undefined || !Number.isFinite(value)) return null
    return { label, value, x: left + step * (index + 0.5), y: top + plotHeight - scale(value, max) }
  })
  // Runs of consecutive figures, each one path: a gap breaks the line.
  const runs: Array<Array<{ readonly x: number; readonly y: number }>> = []
  let run: Array<{ readonly x: number; readonly y: number }> = []
  for (const point of points) {
    if (point === null) {
      if (run.length > 0) runs.push(run)
      run = []
    } else run.push(point)
  }
  if (run.length > 0) runs.push(run)
  const paths = runs
    .filter((part) => part.length > 1)
    .map(
      (part) =>
        html`<polyline points="${part.map((point) => `${coordinate(point.x)},${coordinate(point.y)}`).join(" ")}" fill="none" stroke="${frame.colour}" stroke-width="2"/>`
    )
  const dots = points.map((point) =>
    point === null
      ? ""
      : html`<circle cx="${coordinate(point.x)}" cy="${coordinate(point.y)}" r="3" fill="${frame.colour}"><title>${shortDay(point.label)}: ${format(point.value)}</title></circle>`
  )
  return figure(frame, html`${axes(frame.labels, max, format, frame.whole)}${paths}${dots}`, legend([frame]))
}
