import { expect, test } from "bun:test";
import { validateCommand } from "./validate-command.ts";

// Usage errors are answered before anything starts (no sidecar, no CLI, no namespace).
test("usage errors exit 2", async () => {
  expect(await validateCommand(["--out", "/nonexistent/x"], "test")).toBe(2);
  expect(await validateCommand(["--client", "codex", "--all", "--out", "/nonexistent/x"], "test")).toBe(2);
  expect(await validateCommand(["--client", "codex"], "test")).toBe(2);
  expect(await validateCommand(["--client", "cursor", "--out", "/nonexistent/x"], "test")).toBe(2);
  expect(await validateCommand(["--all", "--binary", "x", "--out", "/nonexistent/x"], "test")).toBe(2);
  expect(
    await validateCommand(
      ["--client", "codex", "--out", "/nonexistent/x", "--clients-dir", "/nonexistent"],
      "test",
    ),
  ).toBe(2);
  expect(
    await validateCommand(["--client", "codex", "--timeout", "soon", "--out", "/nonexistent/x"], "test"),
  ).toBe(2);
});
