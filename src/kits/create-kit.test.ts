import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { clientManifests, clientNames } from "../clients/client-manifests.ts";
import { createKit } from "./create-kit.ts";
import { launchCommand, mcpTokenReference } from "./kit-plan.ts";
import type { LaunchInfo } from "./launch-info.ts";

const root = mkdtempSync("/var/tmp/ura-kit-test-");
afterAll(() => rmSync(root, { recursive: true, force: true }));

const episode: LaunchInfo = {
  id: "ep_test1",
  urls: {
    responses: "http://127.0.0.1:9/e/ep_test1/v1",
    gemini: "http://127.0.0.1:9/e/ep_test1/gemini",
    anthropic: "http://127.0.0.1:9/e/ep_test1/anthropic",
    mcp: "http://127.0.0.1:9/e/ep_test1/mcp",
  },
  ingress_key: "ura_key_SECRETKEY0123",
  mcp_token: "ura_mcp_SECRETTOKEN0123",
  model: "qwen3-vl-plus",
};

// Stands in for the CLI: prints its argv, environment, cwd and whether stdin is at EOF.
const fakeCli = join(root, "fake-cli");
writeFileSync(
  fakeCli,
  `#!/bin/sh\nfor a in "$@"; do printf 'ARG %s\\n' "$a"; done\nenv | sed 's/^/ENV /'\nprintf 'CWD %s\\n' "$(pwd)"\nif read -r line; then echo STDIN open; else echo STDIN eof; fi\n`,
);
chmodSync(fakeCli, 0o755);

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? [join(dir, e.name), ...walk(join(dir, e.name))] : [join(dir, e.name)],
  );
}

async function launch(script: string, prompt: string) {
  const proc = Bun.spawn([script, prompt], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", OUTSIDE_SECRET: "leak" },
    stdin: "pipe",
    stdout: "pipe",
  });
  // The launch script gives the CLI a closed stdin, so it may exit before this write: EPIPE is expected then.
  try {
    proc.stdin.write("typed input\n");
    await proc.stdin.end();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPIPE") throw error;
  }
  const out = await new Response(proc.stdout).text();
  expect(await proc.exited).toBe(0);
  const lines = out.split("\n");
  const env = Object.fromEntries(
    lines
      .filter((l) => l.startsWith("ENV "))
      .map((l) => [l.slice(4, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
  return { args: lines.filter((l) => l.startsWith("ARG ")).map((l) => l.slice(4)), env, lines };
}

describe("client kits", () => {
  for (const client of clientNames) {
    test(`${client}: private files, credentials only in credentials.env, clean environment, argv as verified`, async () => {
      const kit = createKit({ client, episode, dir: join(root, client), bin: fakeCli });
      expect(statSync(kit.dir).mode & 0o777).toBe(0o700);
      for (const path of walk(kit.dir)) {
        const st = statSync(path);
        if (st.isDirectory()) expect(st.mode & 0o077).toBe(0);
        else {
          expect({ path, mode: st.mode & 0o777 }).toEqual({
            path,
            mode: path === kit.launch ? 0o700 : 0o600,
          });
          const text = readFileSync(path, "utf8");
          if (path !== kit.credentials) {
            expect(text).not.toContain(episode.ingress_key);
            expect(text).not.toContain(episode.mcp_token);
          }
        }
      }
      expect(readFileSync(kit.credentials, "utf8")).toContain(`'${episode.mcp_token}'`);

      const prompt = "look at the scene, then say what's there";
      const run = await launch(kit.launch, prompt);
      expect(run.env.OUTSIDE_SECRET).toBeUndefined();
      expect(run.lines).toContain("STDIN eof");
      expect(run.lines).toContain(`CWD ${join(kit.dir, "cwd")}`);
      expect(run.env.HOME).toBe(join(kit.dir, "home"));
      expect(run.env.TMPDIR).toBe(join(kit.dir, "tmp"));
      expect(Object.values(run.env)).toContain(episode.mcp_token);
      expect(Object.values(run.env)).toContain(episode.ingress_key);
      // The script runs exactly what launchCommand describes.
      const direct = launchCommand(kit.plan, prompt);
      expect(run.args).toEqual(direct.cmd.slice(1));
      for (const [k, v] of Object.entries(direct.env)) if (k !== "PATH") expect(run.env[k]).toBe(v);
      if (client === "opencode") expect(run.args.slice(-prompt.split(" ").length)).toEqual(prompt.split(" "));
      else expect(run.args).toContain(prompt);
    });
  }

  test("a CLI missing from PATH is named with its pinned package and the way to point the kit at it", async () => {
    const kit = createKit({ client: "claude", episode, dir: join(root, "missing") });
    const proc = Bun.spawn([kit.launch, "hello"], { env: { PATH: "/usr/bin:/bin" }, stderr: "pipe" });
    const stderr = await new Response(proc.stderr).text();
    expect(await proc.exited).toBe(127);
    expect(stderr).toContain(`'${kit.plan.bin}' is not on PATH`);
    expect(stderr).toContain(`${clientManifests.claude.package}@${clientManifests.claude.version}`);
    expect(stderr).toContain("--binary");
  });

  test("the config files point at the episode and reference the credentials", () => {
    const opencode = createKit({ client: "opencode", episode, dir: join(root, "oc2") });
    const config = JSON.parse(readFileSync(join(opencode.dir, "opencode.json"), "utf8"));
    // The waits for a model answer lie past the sidecar's deadline (10 min by default) and a minute.
    expect(config.provider.ura.options).toEqual({
      baseURL: episode.urls.responses,
      apiKey: "{env:URA_KEY}",
      headerTimeout: 660_000,
      chunkTimeout: 660_000,
    });
    const later = { ...episode, model_deadline_ms: 1_200_000 };
    const claudeEnv = createKit({ client: "claude", episode: later, dir: join(root, "cl3") }).plan.env;
    expect(claudeEnv.API_TIMEOUT_MS).toBe("1260000");
    expect(claudeEnv.CLAUDE_STREAM_IDLE_TIMEOUT_MS).toBe("1260000");
    // A stream error is not asked again without streaming (a request that cannot be kept alive).
    expect(claudeEnv.CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK).toBe("1");
    expect(config.mcp.ura).toMatchObject({
      url: episode.urls.mcp,
      headers: { Authorization: "Bearer {env:URA_MCP_TOKEN}" },
    });
    expect(config.plugin).toEqual([`file://${join(opencode.dir, "plugins/ura-call-id.ts")}`]);
    expect(readFileSync(join(opencode.dir, "plugins/ura-call-id.ts"), "utf8")).toContain(
      "tool.execute.before",
    );
    expect(opencode.plan.bin).toBe("opencode");

    const gemini = createKit({ client: "gemini", episode, dir: join(root, "gm2") });
    expect(gemini.plan.args).toContain("qwen3-vl-plus"); // -m names the episode's model exactly
    const settings = JSON.parse(readFileSync(join(gemini.dir, "home/.gemini/settings.json"), "utf8"));
    expect(settings.mcpServers.ura.headers.Authorization).toBe(`Bearer ${mcpTokenReference}`);
    // Chat compression asks the alias Gemini CLI picks for a model it does not know: the episode's model.
    expect(settings.modelConfigs.customAliases["chat-compression-default"]).toEqual({
      modelConfig: { model: "qwen3-vl-plus" },
    });

    const codex = createKit({ client: "codex", episode, dir: join(root, "cx2") });
    const toml = readFileSync(join(codex.dir, "codex-home/config.toml"), "utf8");
    expect(toml).toContain(`base_url = "${episode.urls.responses}"`);
    expect(toml).toContain('bearer_token_env_var = "URA_MCP_TOKEN"');
    expect(toml).toContain("stream_idle_timeout_ms = 660000");
    expect(codex.warnings).toEqual([]);
    expect(createKit({ client: "codex", episode, dir: mkdtempSync("/tmp/ura-kit-") }).warnings[0]).toContain(
      "/tmp",
    );
  });
});
