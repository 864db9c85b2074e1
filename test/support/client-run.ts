/**
 * One real, pinned CLI run against the compiled binary for the end-to-end tests
 * (tests only): the binary serving on loopback with the scripted upstream on its
 * own port (so a test can inject faults), and the CLI launched through its kit
 * (`createKit` + `launchCommand`, the settings `ura-sidecar client-config` and
 * `validate` use), also against an upstream that fails every request.
 */
import { expect } from "bun:test";
import { existsSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import type { ClientName } from "../../src/clients/client-manifests.ts";
import { clientManifests } from "../../src/clients/client-manifests.ts";
import { clientBinPath, installedVersion } from "../../src/clients/install-clients.ts";
import { type CreatedKit, createKit } from "../../src/kits/create-kit.ts";
import { launchCommand } from "../../src/kits/kit-plan.ts";
import { runLaunch } from "../../src/kits/run-launch.ts";
import {
  type ServedScriptedUpstream,
  serveScriptedUpstream,
} from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { smokePrompt } from "../../src/validate/validate-client.ts";
import { type Line, records } from "./episode-evidence.ts";
import {
  binaryPath,
  type EpisodeStatus,
  type LaunchInfo,
  type SidecarProcess,
  startSidecarProcess,
} from "./sidecar-process.ts";
import { varTmp } from "./var-tmp.ts";
import { versionUnderTest } from "./version-under-test.ts";

export type Upstream = ServedScriptedUpstream;

/** The compiled binary and the pinned CLI are there (`make build`, `make clients`). */
export function assertPrerequisites(client: ClientName): void {
  if (!existsSync(binaryPath)) throw new Error(`${binaryPath} is missing: run \`make build\` first`);
  const manifest = clientManifests[client];
  const version = versionUnderTest(client);
  if (installedVersion(client) !== version) {
    throw new Error(
      `${manifest.package}@${version} is not installed: run \`bun src/clients/install-clients.ts ${client}\``,
    );
  }
}

/**
 * The compiled binary serving against the scripted upstream for the length of
 * `body`; afterwards it must stop with exit 0.
 */
export async function withServedSidecar(
  client: ClientName,
  body: (served: { upstream: Upstream; sidecar: SidecarProcess }) => Promise<void>,
  upstreamOptions: Parameters<typeof serveScriptedUpstream>[1] = {},
  /** The sidecar's config file, when the defaults do not fit. */
  config?: Record<string, unknown>,
): Promise<void> {
  assertPrerequisites(client);
  const upstream = await serveScriptedUpstream(0, upstreamOptions);
  const sidecar = await startSidecarProcess({ upstreamUrl: upstream.url, ...(config ? { config } : {}) });
  try {
    await body({ upstream, sidecar });
  } finally {
    const exit = await sidecar.stop();
    upstream.stop();
    expect(exit).toBe(0);
  }
}

export type ClientRun = {
  kit: CreatedKit;
  stdout: string;
  stderr: string;
  code: number;
  ms: number;
  /** The CLI's exit and output tails and the sidecar's, for a failure message. */
  context: string;
};

/**
 * Runs the pinned CLI once against an episode through a fresh kit (outside any
 * git checkout and outside /tmp, which Codex dislikes), on the smoke prompt;
 * killed after `timeoutMs`.
 */
export async function runClient(
  client: ClientName,
  sidecar: SidecarProcess,
  episode: LaunchInfo,
  options: { timeoutMs: number; model?: string },
): Promise<ClientRun> {
  const dir = mkdtempSync(join(varTmp(), `${client}-`));
  const kit = createKit({ client, episode, dir, bin: clientBinPath(client), model: options.model });
  const launch = launchCommand(kit.plan, smokePrompt);
  const { stdout, stderr, code, ms } = await runLaunch(launch, options.timeoutMs);
  const context = `${client} exit ${code}\nstdout:\n${stdout.slice(-4000)}\nstderr:\n${stderr.slice(-4000)}\nsidecar:\n${sidecar.output().slice(-4000)}`;
  return { kit, stdout, stderr, code, ms, context };
}

export type FailingUpstreamRun = {
  upstream: Upstream;
  run: ClientRun;
  status: EpisodeStatus;
  /** The episode's exchange statuses, in order. */
  statuses: Line[];
};

/** The sidecar's retries against the failing upstream: three attempts, then the failure is the client's. */
const failingUpstreamConfig = { upstream: { retry: { max_attempts: 3, initial_backoff_ms: 250 } } };

/**
 * The CLI once against an upstream that answers every request with a 503: the
 * sidecar's own retries are spent (three attempts, failingUpstreamConfig), the client gets the error, retries, and gets
 * a final 400 from an episode now in provider_error. Asserts what holds for
 * every client — the episode failed with provider_error and no tool call was
 * registered — then hands the run to `check` for the client's own behaviour.
 */
export function runAgainstFailingUpstream(
  client: ClientName,
  timeoutMs: number,
  check: (failed: FailingUpstreamRun) => void,
): Promise<void> {
  return withServedSidecar(
    client,
    async ({ upstream, sidecar }) => {
      const episode = await sidecar.createEpisode({ client });
      upstream.scripted.enqueueFaults(
        Array.from({ length: 10 }, () => ({ kind: "status" as const, status: 503 })),
      );
      const run = await runClient(client, sidecar, episode, { timeoutMs });
      const statuses = records(episode.records_dir, "exchanges").filter((l) => l.stage === "status");
      const status = await sidecar.episode(episode.id);
      try {
        check({ upstream, run, status, statuses });
        expect(status.failure).toMatchObject({ reason: "provider_error" });
        expect(records(episode.records_dir, "ledger").filter((e) => e.type === "registered")).toEqual([]);
      } catch (error) {
        console.error(run.context);
        throw error;
      }
    },
    {},
    failingUpstreamConfig,
  );
}
