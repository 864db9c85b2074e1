import { expect, test } from "bun:test";
import { scenarioResults } from "./scenario-results.ts";

test("each test of a bun test report, without its describe block; the summary's repeat of a failure counts once", () => {
  const output = [
    "bun test v1.4.5 (a7733435c)",
    "",
    "test/e2e/claude.e2e.test.ts:",
    "(pass) Claude Code end to end (inside the network namespace) > Claude Code smoke episode (validate): every check [2035.47ms]",
    "error: expect(received).toMatchObject(expected)",
    "(fail) Claude Code end to end (inside the network namespace) > upstream failure: a final 400 at once [2457.49ms]",
    "(pass) Claude Code end to end, inside a loopback-only network namespace [5128.53ms]",
    "(skip) images of failed tool results (inside the network namespace) > gemini: a failing record's frame",
    "",
    "1 tests failed:",
    "(fail) Claude Code end to end (inside the network namespace) > upstream failure: a final 400 at once [2457.49ms]",
    " 1 pass",
    " 1 fail",
  ].join("\n");
  expect(scenarioResults(output)).toEqual([
    { scenario: "Claude Code smoke episode (validate): every check", result: "pass" },
    { scenario: "upstream failure: a final 400 at once", result: "fail" },
    { scenario: "gemini: a failing record's frame", result: "skip" },
  ]);
});
