import { expect, test } from "bun:test";
import { clientManifests } from "../clients/client-manifests.ts";
import {
  type Compatibility,
  compatibilitySchema,
  renderCompatibility,
  withRuns,
} from "./compatibility-table.ts";

const run = (version: string, result: "pass" | "fail") => ({
  version,
  released: "2026-11-20",
  tested: "2026-12-05",
  smoke: "pass" as const,
  scenarios: [
    { scenario: "smoke episode (validate): every check", result: "pass" as const },
    { scenario: "upstream failure | final 400", result },
  ],
});

test("a run replaces the same version's earlier run and keeps the others, in version order", () => {
  const first = withRuns({ clients: {} }, "claude", [run("2.1.331", "fail"), run("2.1.330", "pass")]);
  const second = withRuns(first, "claude", [run("2.1.331", "pass"), run("2.1.332", "pass")]);
  expect(second.clients.claude?.map((r) => [r.version, r.scenarios[1]?.result])).toEqual([
    ["2.1.330", "pass"],
    ["2.1.331", "pass"],
    ["2.1.332", "pass"],
  ]);
  expect(compatibilitySchema.parse(JSON.parse(JSON.stringify(second)))).toEqual(second);
});

test("one table per client: a column per version, a row per scenario, failures stand out", () => {
  const record: Compatibility = withRuns({ clients: {} }, "codex", [
    run("0.169.1", "fail"),
    run("0.171.0", "pass"),
  ]);
  const md = renderCompatibility(record);
  expect(md).toContain(`## codex (@openai/codex)`);
  expect(md).toContain(`Pinned: ${clientManifests.codex.version}.`);
  expect(md).toContain("|  | 0.169.1 | 0.171.0 |");
  expect(md).toContain("| released | 2026-11-20 | 2026-11-20 |");
  expect(md).toContain("| upstream failure \\| final 400 | **FAIL** | pass |");
  expect(md).toContain("| **all passed** | **no** | yes |");
  expect(md).not.toContain("## claude");
});
