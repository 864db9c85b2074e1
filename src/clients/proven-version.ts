/**
 * What `client-config` says about the client a kit will run: its version, and
 * whether that version is one the end-to-end suite proved (the manifest's
 * `proven_versions`). A version that is not proven gets a warning naming the
 * proven ones and how to check it (`ura-sidecar validate`); the kit is written
 * either way, since a lab may mean to try a new release.
 */
import { type ClientName, clientManifests } from "./client-manifests.ts";

/** The client binary as found: its path, and the version its `--version` printed (undefined: none found). */
export type FoundClient = { bin: string; version: string | undefined } | undefined;

export type ProvenNote = { summary: string; warning?: string };

export function provenVersionNote(client: ClientName, found: FoundClient, bin: string): ProvenNote {
  const m = clientManifests[client];
  const proven = `proven: ${m.proven_versions.join(", ")}; pinned ${m.version}`;
  if (found === undefined)
    return {
      summary: `${bin} not found`,
      warning: `${bin} is not installed (not a file, not on PATH): install ${m.package}@${m.version} (${proven}), or give its path with --binary`,
    };
  if (found.version === undefined)
    return {
      summary: `${found.bin} (version unknown)`,
      warning: `${found.bin} --version named no version: cannot tell whether it is a proven version of ${m.package} (${proven})`,
    };
  if (!m.proven_versions.includes(found.version))
    return {
      summary: `${m.package} ${found.version} (NOT a proven version)`,
      warning: `${m.package} ${found.version} at ${found.bin} is not a proven version (${proven}): check it with \`ura-sidecar validate --client ${client} --binary ${found.bin} --out DIR\` first (docs/compatibility.md)`,
    };
  const pin = found.version === m.version ? "the pin" : `proven; pinned ${m.version}`;
  return { summary: `${m.package} ${found.version} (${pin})` };
}
