/**
 * `ura-sidecar validate --upstream`: the smoke episode against the configured
 * endpoint (URA_UPSTREAM_URL, URA_UPSTREAM_API_KEY, --model), judged from the
 * sidecar's records alone. The endpoint here is the scripted Chat Completions
 * server started as its own process on loopback — the same code path a real Qwen
 * endpoint takes. All four pinned CLIs pass against it; a model that follows the
 * script but misreads the frame (`--colour-blind`) fails, with the evidence and
 * the deviation said plainly. Both against the instant scripted model and a slow,
 * throttling one (test/support/upstream-profiles-under-test.ts), as a real endpoint is.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { clientNames } from "../../src/clients/client-manifests.ts";
import { installClients } from "../../src/clients/install-clients.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { binaryPath } from "../support/sidecar-process.ts";
import {
  forEachUpstreamProfile,
  type UpstreamProfileUnderTest,
  upstreamProfilesUnderTest,
} from "../support/upstream-profiles-under-test.ts";
import { runValidate } from "../support/validate-run.ts";

const timeoutMs = 600_000;
const serveScript = resolve(import.meta.dir, "../../src/scripted-upstream/serve-scripted-upstream.ts");
const model = "qwen3-vl-flash";
const apiKey = "sk-validate-upstream-key-0123456789";

type Served = { url: string; stop: () => Promise<void> };

/** The served upstream plays `profile` from now on (its burst windows count from here). */
async function playProfile(served: Served, profile: UpstreamProfileUnderTest): Promise<void> {
  const res = await fetch(new URL("/__script/profile", served.url), {
    method: "POST",
    body: JSON.stringify(profile.profile),
  });
  if (!res.ok) throw new Error(`upstream profile ${profile.name}: HTTP ${res.status} ${await res.text()}`);
}

async function startUpstreamProcess(args: string[] = []): Promise<Served> {
  const proc = Bun.spawn([process.execPath, serveScript, "--port", "0", ...args], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  const deadline = Date.now() + 20_000;
  while (!/listening: (\S+)/.test(text)) {
    if (Date.now() > deadline) throw new Error(`scripted upstream did not start: ${text}`);
    const { value, done } = await reader.read();
    if (done) throw new Error(`scripted upstream exited: ${text}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return {
    url: /listening: (\S+)/.exec(text)?.[1] as string,
    stop: async () => {
      proc.kill();
      await proc.exited;
    },
  };
}

describeInLoopbackNamespace(
  "validate --upstream against an external upstream process",
  { file: import.meta.path, timeoutMs: 2 * timeoutMs * upstreamProfilesUnderTest.length },
  () => {
    let upstream: Served;
    let colourBlind: Served;
    beforeAll(async () => {
      if (!existsSync(binaryPath)) throw new Error(`${binaryPath} is missing: run make build first`);
      await installClients([...clientNames]);
      upstream = await startUpstreamProcess();
      colourBlind = await startUpstreamProcess(["--colour-blind"]);
    }, timeoutMs);
    afterAll(async () => {
      await upstream?.stop();
      await colourBlind?.stop();
    });

    forEachUpstreamProfile((profile) => {
      test(
        `all four pinned CLIs pass; validation.json names the CLI version, model, upstream host, sidecar version${profile.label}`,
        async () => {
          await playProfile(upstream, profile);
          const run = await runValidate(["--all", "--upstream", "--model", model], {
            URA_UPSTREAM_URL: upstream.url,
            URA_UPSTREAM_API_KEY: apiKey,
          });
          if (run.code !== 0) console.error(run.stdout, run.stderr);
          expect(run.code).toBe(0);
          const host = new URL(upstream.url).host;
          expect(run.summary).toMatchObject({
            passed: true,
            upstream: "configured",
            upstream_host: host,
            model,
          });
          expect(run.stdout).toContain(`the configured upstream ${host} (model ${model})`);
          expect(run.summary?.clients.map((c) => c.client).sort()).toEqual([...clientNames].sort());
          const version = Bun.spawnSync([binaryPath, "--version"]).stdout.toString();
          for (const client of clientNames) {
            const perClient = JSON.parse(readFileSync(join(run.out, client, "validation.json"), "utf8"));
            expect(perClient).toMatchObject({
              client,
              passed: true,
              model,
              upstream_host: host,
              model_deviations: [],
            });
            expect(version).toContain(perClient.sidecar_version);
            expect(perClient.version).toMatch(/^\d+\.\d+\.\d+/);
            expect(perClient.checks.filter((c: { pass: boolean }) => !c.pass)).toEqual([]);
            // Judged from the records: the wire requests in upstream-requests.json are the recorded ones.
            const wire = JSON.parse(readFileSync(join(run.out, client, "upstream-requests.json"), "utf8"));
            expect(wire.length).toBeGreaterThanOrEqual(4);
            expect(wire.every((r: { body: { model: string } }) => r.body.model === model)).toBe(true);
          }
          // The key went to the upstream, never into the records or validate's output.
          expect(readFileSync(join(run.out, "sidecar.log"), "utf8")).not.toContain(apiKey);
          expect(run.stdout).not.toContain(apiKey);
          expect(Bun.spawnSync(["grep", "-rl", apiKey, run.out]).stdout.toString()).toBe("");
        },
        timeoutMs,
      );

      test(
        `a model that misreads the frame fails validation, with the finish receipt as evidence and the deviation said plainly${profile.label}`,
        async () => {
          await playProfile(colourBlind, profile);
          const run = await runValidate(["--client", "codex", "--upstream"], {
            URA_UPSTREAM_URL: colourBlind.url,
            URA_UPSTREAM_API_KEY: apiKey,
          });
          expect(run.code).toBe(1);
          expect(run.summary?.passed).toBe(false);
          const codex = run.summary?.clients[0] as unknown as {
            checks: { name: string; pass: boolean; evidence: string }[];
            model_deviations: string[];
          };
          const failed = codex.checks.filter((c) => !c.pass).map((c) => c.name);
          expect(failed).toEqual(["finish receipt submitted with the right colour"]);
          expect(codex.checks.find((c) => c.name.startsWith("finish"))?.evidence).toContain(
            '"correct":false',
          );
          expect(codex.model_deviations).toHaveLength(1);
          expect(codex.model_deviations[0]).toMatch(
            /^finish call_\S+ answered "\w+", which the receipt says is not the colour/,
          );
          expect(run.stdout).toContain("model deviation: finish");
        },
        timeoutMs,
      );
    });
  },
);
