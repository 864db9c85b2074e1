/**
 * Per-scenario results of one `bun test` run, read from its report lines
 * (`(pass) <describe> > <test> [12.3ms]`, `(fail) …`, `(skip) …`): a scenario is a
 * test, named without its describe block, which only says where it ran.
 */
export type ScenarioResult = { scenario: string; result: "pass" | "fail" | "skip" };

const reportLine = /^\((pass|fail|skip|todo)\) (.+?)(?: \[[\d.]+m?s\])?$/;

export function scenarioResults(output: string): ScenarioResult[] {
  const results = new Map<string, ScenarioResult["result"]>();
  for (const line of output.split("\n")) {
    const match = reportLine.exec(line.trim());
    if (!match) continue;
    const [, outcome, name = ""] = match;
    const separator = name.lastIndexOf(" > ");
    // A line without a describe block is the outer test that ran the file in a namespace.
    if (separator === -1) continue;
    const scenario = name.slice(separator + 3);
    // Bun prints a failed test once as it runs and again in the closing summary.
    results.set(scenario, outcome === "fail" ? "fail" : outcome === "pass" ? "pass" : "skip");
  }
  return [...results].map(([scenario, result]) => ({ scenario, result }));
}
