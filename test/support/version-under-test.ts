/**
 * Which version of a client the end-to-end tests run (tests only): the pinned one in
 * `.clients/`, or, with `URA_CLIENTS_DIR`, whatever version that folder holds — a
 * candidate for the next pin, or one release of a compatibility run.
 */
import type { ClientName } from "../../src/clients/client-manifests.ts";
import { clientManifests } from "../../src/clients/client-manifests.ts";
import { clientsRoot, installedVersion } from "../../src/clients/install-clients.ts";

export const candidateClients = process.env.URA_CLIENTS_DIR !== undefined;

/** The version the tests expect to find installed and to see in the client's User-Agent. */
export function versionUnderTest(client: ClientName): string {
  const pinned = clientManifests[client].version;
  if (!candidateClients) return pinned;
  const installed = installedVersion(client);
  if (installed === undefined)
    throw new Error(`${client} is not installed in URA_CLIENTS_DIR (${clientsRoot})`);
  return installed;
}

/** `validate` arguments that make it use the same clients folder as the tests. */
export function clientsDirArguments(): string[] {
  return candidateClients ? ["--clients-dir", clientsRoot] : [];
}
