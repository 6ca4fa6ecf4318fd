// A Vitest reporter that writes each test file's figures, per project (database), to the JSON file named by
// TEST_TIMES_FILE: the seconds its worker took (import, setup, tests and hooks), the CPU seconds its worker and the
// processes it waited for spent (apps/server/test/support/FileCost.setup.ts), and how many tests it ran.
// It also writes each failed test's error and each error outside a test, which .ci/timings.mjs prints last, after the
// output of the jobs that ran beside the tests, with the slowest files. Use: vitest run --reporter=default --reporter=./.ci/test-times-reporter.mjs
import { writeFileSync } from "node:fs"
import { relative } from "node:path"

export default class TestTimes {
  onInit(vitest) {
    this.root = vitest.config.root
  }

  onTestRunEnd(testModules, unhandledErrors = []) {
    const target = process.env.TEST_TIMES_FILE
    if (!target) return
    const files = testModules.map((module) => {
      const diagnostic = module.diagnostic()
      const seconds = (diagnostic.environmentSetupDuration + diagnostic.prepareDuration + diagnostic.setupDuration +
        diagnostic.collectDuration + diagnostic.duration) / 1000
      return {
        project: module.project.name,
        file: relative(this.root, module.moduleId),
        state: module.state(),
        tests: [...module.children.allTests()].length,
        seconds: Math.round(seconds * 10) / 10,
        cpuSeconds: module.meta().cpuSeconds ?? null
      }
    })
    const firstLines = (errors) => (errors ?? []).map((error) => String(error.stack ?? error.message ?? error).split("\n").slice(0, 8).join("\n"))
    const failures = testModules.flatMap((module) => [
      ...firstLines(module.errors()).map((error) => ({ project: module.project.name, file: relative(this.root, module.moduleId), test: "(the file)", error })),
      ...[...module.children.allTests("failed")].map((test) => ({
        project: module.project.name,
        file: relative(this.root, module.moduleId),
        test: test.fullName,
        error: firstLines(test.result().errors).join("\n")
      }))
    ])
    writeFileSync(target, JSON.stringify({ files, failures, unhandled: firstLines(unhandledErrors) }, null, 1))
  }
}
