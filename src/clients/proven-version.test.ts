import { expect, test } from "bun:test";
import { clientManifests } from "./client-manifests.ts";
import { provenVersionNote } from "./proven-version.ts";

const claude = clientManifests.claude;

test("the pin and every other proven version pass without a warning", () => {
  expect(provenVersionNote("claude", { bin: "/x/claude", version: claude.version }, "claude")).toEqual({
    summary: `${claude.package} ${claude.version} (the pin)`,
  });
  const other = claude.proven_versions.find((v) => v !== claude.version);
  expect(other).toBeDefined();
  expect(provenVersionNote("claude", { bin: "/x/claude", version: other }, "claude")).toEqual({
    summary: `${claude.package} ${other} (proven; pinned ${claude.version})`,
  });
});

test("a version that is not proven is said plainly, with the proven ones and how to check it", () => {
  const note = provenVersionNote("claude", { bin: "/x/claude", version: "2.1.999" }, "claude");
  expect(note.summary).toBe(`${claude.package} 2.1.999 (NOT a proven version)`);
  expect(note.warning).toContain(`proven: ${claude.proven_versions.join(", ")}; pinned ${claude.version}`);
  expect(note.warning).toContain("ura-sidecar validate --client claude --binary /x/claude");
});

test("no binary, or one that names no version", () => {
  expect(provenVersionNote("codex", undefined, "codex").warning).toContain(
    `codex is not installed (not a file, not on PATH): install @openai/codex@${clientManifests.codex.version}`,
  );
  expect(provenVersionNote("codex", { bin: "/x/codex", version: undefined }, "codex").warning).toContain(
    "--version named no version",
  );
});
