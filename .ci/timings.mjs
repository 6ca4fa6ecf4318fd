// Prints CI's timing table: each phase's seconds (the lines "<phase> <seconds> [beside]" of the file in argv[2]; a
// phase "beside" ran at the same time as others), CI's own seconds (argv[4]), the ten slowest test files with their
// wall and CPU seconds, then each failed test's error (the JSON of .ci/test-times-reporter.mjs in argv[3], if any).
import { existsSync, readFileSync } from "node:fs"

const [phasesFile, testTimesFile, wallSeconds] = process.argv.slice(2)
const pad = (value, width) => String(value).padStart(width)

const phases = readFileSync(phasesFile, "utf8").trim().split("\n").filter(Boolean).map((line) => {
  const [name, seconds, beside] = line.split(" ")
  return { name, seconds: Number(seconds), beside: beside === "beside" }
})
const nameWidth = Math.max(5, ...phases.map(({ name }) => name.length))
console.log(`\nCI timing (seconds)\n${"phase".padEnd(nameWidth)} ${pad("s", 6)}`)
for (const { beside, name, seconds } of phases) console.log(`${name.padEnd(nameWidth)} ${pad(seconds, 6)}${beside ? "  (beside the others)" : ""}`)
console.log(`${"total".padEnd(nameWidth)} ${pad(wallSeconds ?? phases.reduce((sum, { seconds }) => sum + seconds, 0), 6)}`)

if (testTimesFile && existsSync(testTimesFile)) {
  const { failures = [], files, unhandled = [] } = JSON.parse(readFileSync(testTimesFile, "utf8"))
  const sum = (rows, field) => Math.round(rows.reduce((acc, row) => acc + (row[field] ?? 0), 0))
  for (const project of [...new Set(files.map(({ project }) => project))]) {
    const rows = files.filter((row) => row.project === project)
    console.log(`tests on ${project}: ${rows.length} files, ${sum(rows, "tests")} tests, ${sum(rows, "seconds")} s in workers, ${sum(rows, "cpuSeconds")} CPU s`)
  }
  const slowest = [...files].sort((a, b) => b.seconds - a.seconds).slice(0, 10)
  const fileWidth = Math.max(...slowest.map(({ file }) => file.length))
  console.log(`\nslowest test files ${"".padEnd(fileWidth - 18)} ${"project".padEnd(8)} ${pad("wall s", 7)} ${pad("CPU s", 6)}`)
  for (const { file, project, seconds, cpuSeconds } of slowest) {
    console.log(`${file.padEnd(fileWidth)} ${project.padEnd(8)} ${pad(seconds.toFixed(1), 7)} ${pad(cpuSeconds === null ? "-" : cpuSeconds.toFixed(1), 6)}`)
  }
  if (failures.length > 0) console.log(`\nfailed tests (${failures.length})`)
  for (const { error, file, project, test } of failures) console.log(`\n[${project}] ${file} > ${test}\n${error}`)
  if (unhandled.length > 0) console.log(`\nerrors outside the tests (${unhandled.length})`)
  for (const error of unhandled) console.log(`\n${error}`)
}
