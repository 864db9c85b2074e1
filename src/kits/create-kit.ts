/**
 * Plans and writes the kit of one client for one episode (`ura-sidecar
 * client-config`, `ura-sidecar validate`).
 */
import { resolve } from "node:path";
import { type ClientName, clientManifests } from "../clients/client-manifests.ts";
import type { KitPlan } from "./kit-plan.ts";
import type { LaunchInfo } from "./launch-info.ts";
import { planKit } from "./plan-kit.ts";
import { type WrittenKit, writeKit } from "./write-kit.ts";

export type CreateKitOptions = {
  client: ClientName;
  episode: LaunchInfo;
  dir: string;
  /** The CLI executable (default: the pinned package's command, found on PATH at launch). */
  bin?: string;
  model?: string;
};

export type CreatedKit = WrittenKit & { plan: KitPlan; warnings: string[] };

export function createKit(options: CreateKitOptions): CreatedKit {
  const dir = resolve(options.dir);
  const manifest = clientManifests[options.client];
  const bin =
    options.bin === undefined ? manifest.bin : options.bin.includes("/") ? resolve(options.bin) : options.bin;
  const plan = planKit(options.client, {
    dir,
    episode: options.episode,
    manifest,
    bin,
    model: options.model,
  });
  const warnings: string[] = [];
  if (options.client === "codex" && /^\/tmp(\/|$)/.test(dir)) {
    warnings.push(
      `Codex misbehaves with CODEX_HOME under /tmp (docs/clients.md); ${dir} is under /tmp — prefer e.g. /var/tmp`,
    );
  }
  return { ...writeKit(plan, dir, manifest, options.episode.id), plan, warnings };
}
