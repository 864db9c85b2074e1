import { afterAll, beforeAll, expect, spyOn, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clientManifests } from "../clients/client-manifests.ts";
import { loadConfig } from "../config/load-config.ts";
import { type Sidecar, startSidecar } from "../server/start-sidecar.ts";
import { clientConfigCommand } from "./client-config-command.ts";

const password = "pw-client-config-0123456789";
let sidecar: Sidecar;
const root = mkdtempSync(join(tmpdir(), "ura-client-config-"));
beforeAll(async () => {
  sidecar = await startSidecar({
    config: loadConfig({ listen: "127.0.0.1:0", "data-dir": join(root, "data") }, {}),
    secrets: { upstreamApiKey: undefined, controlPassword: password },
    version: "test",
    out: () => {},
    logWrite: () => {},
  });
});
afterAll(() => sidecar.shutdown("test done"));

/** A new claude episode's launch info, as POST /control/episodes returned it, saved under `name` in root. */
async function savedLaunchInfo(name: string): Promise<string> {
  const res = await fetch(`${sidecar.baseUrl()}/control/episodes`, {
    method: "POST",
    headers: { authorization: `Bearer ${password}` },
    body: JSON.stringify({ client: "claude" }),
  });
  const file = join(root, name);
  writeFileSync(file, await res.text());
  return file;
}

test("by id: the launch info comes from the control API (credentials included) and the kit is written", async () => {
  const episode = sidecar.episodes.create({ max_turns: 0, client: "codex" });
  const out = join(root, "by-id");
  const code = await clientConfigCommand(
    ["codex", "--episode", episode.id, "--sidecar", sidecar.baseUrl(), "--out", out],
    { URA_CONTROL_PASSWORD: password },
  );
  expect(code).toBe(0);
  expect(readFileSync(join(out, "credentials.env"), "utf8")).toContain(episode.mcpToken);
  expect(readFileSync(join(out, "codex-home/config.toml"), "utf8")).toContain(`/e/${episode.id}/v1`);
  expect(existsSync(join(out, "launch"))).toBe(true);
});

test("by id with a wrong password: exit 1, nothing written", async () => {
  const episode = sidecar.episodes.create({ max_turns: 0 });
  const out = join(root, "wrong-pw");
  const code = await clientConfigCommand(
    ["claude", "--episode", episode.id, "--sidecar", sidecar.baseUrl(), "--out", out],
    { URA_CONTROL_PASSWORD: "wrong" },
  );
  expect(code).toBe(1);
  expect(existsSync(out)).toBe(false);
});

test("from the JSON POST /control/episodes returned; usage errors exit 2", async () => {
  const file = await savedLaunchInfo("launch.json");
  const out = join(root, "from-file");
  expect(await clientConfigCommand(["claude", "--episode", file, "--out", out], {})).toBe(0);
  expect(JSON.parse(readFileSync(join(out, "mcp.json"), "utf8")).mcpServers.ura.url).toContain("/mcp");
  expect(await clientConfigCommand(["cursor", "--episode", file, "--out", out], {})).toBe(2);
  expect(await clientConfigCommand(["claude", "--out", out], {})).toBe(2);
});

test("the records' episode.json is not launch info: exit 1 saying which file is meant, nothing written", async () => {
  const episode = sidecar.episodes.create({ max_turns: 0 });
  const out = join(root, "records-episode-json");
  const errors: string[] = [];
  const spy = spyOn(console, "error").mockImplementation((text: string) => {
    errors.push(text);
  });
  try {
    const file = join(episode.records.dir, "episode.json");
    expect(await clientConfigCommand(["gemini", "--episode", file, "--out", out], {})).toBe(1);
  } finally {
    spy.mockRestore();
  }
  expect(existsSync(out)).toBe(false);
  expect(errors.join("\n")).toContain(
    "is not launch info (the JSON POST /control/episodes returns): urls, ingress_key, mcp_token missing or not valid",
  );
});

test("--new-episode --context-policy body_budget creates a camera episode with that policy and writes its kit", async () => {
  const out = join(root, "camera");
  const lines: string[] = [];
  const log = console.log;
  console.log = (line: string) => lines.push(line);
  let code: number;
  try {
    code = await clientConfigCommand(
      [
        "opencode",
        "--new-episode",
        "--context-policy",
        "body_budget",
        "--sidecar",
        sidecar.baseUrl(),
        "--out",
        out,
      ],
      { URA_CONTROL_PASSWORD: password },
    );
  } finally {
    console.log = log;
  }
  expect(code).toBe(0);
  const id = /kit for episode (\S+)/.exec(lines.join("\n"))?.[1] ?? "";
  expect(sidecar.episodes.get(id).context).toMatchObject({
    policy: "body_budget",
    low_water_fraction: 0.6,
  });
  expect(readFileSync(join(out, "credentials.env"), "utf8")).toContain(sidecar.episodes.get(id).mcpToken);
});

test("--context-policy with an existing episode checks its policy (fixed at creation): exit 1 when it differs", async () => {
  const episode = sidecar.episodes.create({ max_turns: 0 });
  const args = ["codex", "--episode", episode.id, "--sidecar", sidecar.baseUrl()];
  const env = { URA_CONTROL_PASSWORD: password };
  const out = join(root, "mismatch");
  expect(await clientConfigCommand([...args, "--context-policy", "body_budget", "--out", out], env)).toBe(1);
  expect(existsSync(out)).toBe(false);
  expect(await clientConfigCommand([...args, "--context-policy", "identity", "--out", out], env)).toBe(0);
  expect(await clientConfigCommand([...args, "--context-policy", "camera", "--out", out], env)).toBe(2);
  expect(await clientConfigCommand([...args, "--new-episode", "--out", out], env)).toBe(2);
});

test("no sidecar at the address: exit 1 naming the address, how to start one and --sidecar", async () => {
  // A port that was just free: nothing listens there.
  const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const address = `http://127.0.0.1:${closed.port}`;
  closed.stop(true);
  const errors: string[] = [];
  const error = console.error;
  console.error = (line: string) => errors.push(line);
  try {
    for (const how of [["--new-episode"], ["--episode", "ep_0000000000000000"]]) {
      errors.length = 0;
      const out = join(root, "no-sidecar");
      const code = await clientConfigCommand(["claude", ...how, "--sidecar", address, "--out", out], {
        URA_CONTROL_PASSWORD: password,
      });
      expect(code).toBe(1);
      expect(existsSync(out)).toBe(false);
      expect(errors.join("\n")).toContain(`no sidecar answers at ${address}`);
      expect(errors.join("\n")).toContain("make run");
      expect(errors.join("\n")).toContain("--sidecar URL");
    }
  } finally {
    console.error = error;
  }
});

test("the client the kit runs: its version, and a warning when it is not a proven one", async () => {
  const file = await savedLaunchInfo("launch-versions.json");
  /** A stand-in `claude` that prints `version` the way the real one does. */
  const fakeClaude = (version: string) => {
    const bin = join(root, `claude-${version}`);
    writeFileSync(bin, `#!/bin/sh\necho '${version} (Claude Code)'\n`, { mode: 0o755 });
    return bin;
  };
  const run = async (bin: string) => {
    const lines: string[] = [];
    const errors: string[] = [];
    const log = spyOn(console, "log").mockImplementation((line: string) => {
      lines.push(line);
    });
    const error = spyOn(console, "error").mockImplementation((line: string) => {
      errors.push(line);
    });
    try {
      const out = join(root, `kit-${bin.split("/").at(-1)}`);
      expect(
        await clientConfigCommand(["claude", "--episode", file, "--out", out, "--binary", bin], {}),
      ).toBe(0);
    } finally {
      log.mockRestore();
      error.mockRestore();
    }
    return { out: lines.join("\n"), err: errors.join("\n") };
  };
  const { version, proven_versions } = clientManifests.claude;
  const pinned = await run(fakeClaude(version));
  expect(pinned.out).toContain(`client       @anthropic-ai/claude-code ${version} (the pin)`);
  expect(pinned.err).toBe("");
  const unproven = await run(fakeClaude("2.1.999"));
  expect(unproven.out).toContain("@anthropic-ai/claude-code 2.1.999 (NOT a proven version)");
  expect(unproven.err).toContain(`is not a proven version (proven: ${proven_versions.join(", ")}`);
  const missing = await run(join(root, "no-such-claude"));
  expect(missing.err).toContain("is not installed");
});
