/**
 * Puts a planned kit on disk: the client's config files, credentials.env (the
 * episode's credentials, mode 0600), kit.json (what the kit is for, no secrets)
 * and the `launch` script. The kit directory is 0700 and every file in it 0600
 * (the script 0700), so nothing in it is world-readable.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { ClientManifest } from "../clients/client-manifests.ts";
import type { KitPlan } from "./kit-plan.ts";
import {
  credentialsFileName,
  launchScriptPath,
  renderEnvFile,
  renderLaunchScript,
} from "./render-launch-script.ts";

export type WrittenKit = { dir: string; launch: string; credentials: string; files: string[] };

function writePrivate(path: string, content: string, mode = 0o600): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, content, { mode });
  chmodSync(path, mode); // an existing file keeps its old mode otherwise
}

export function writeKit(
  plan: KitPlan,
  dir: string,
  manifest: ClientManifest,
  episodeId: string,
): WrittenKit {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  for (const d of plan.dirs) mkdirSync(d, { recursive: true, mode: 0o700 });
  for (const f of plan.files) writePrivate(f.path, f.content);
  const credentials = join(dir, credentialsFileName);
  writePrivate(credentials, renderEnvFile(plan.credentials));
  const kitJson = {
    client: plan.client,
    package: manifest.package,
    version: manifest.version,
    episode: episodeId,
    model: plan.model,
    bin: plan.bin,
    launch: launchScriptPath(dir),
    credentials: { file: credentials, variables: Object.keys(plan.credentials) },
  };
  writePrivate(join(dir, "kit.json"), `${JSON.stringify(kitJson, null, 2)}\n`);
  const launch = launchScriptPath(dir);
  writePrivate(launch, renderLaunchScript(plan, dir, manifest, episodeId), 0o700);
  return { dir, launch, credentials, files: plan.files.map((f) => f.path) };
}
