/**
 * Where each client's MCP `tools/call` carries the model's call id (the manifests'
 * `mcp_identity`): Claude Code in `_meta["claudecode/toolUseId"]`, Codex in
 * `_meta.callId`, OpenCode in the `_callID` argument our plugin adds. Gemini CLI
 * carries none (docs/clients.md). Read from the raw request: the MCP SDK strips
 * unknown argument keys before a handler runs.
 */
import type { ClientManifest } from "./client-manifests.ts";
import { callIdArgument } from "./private-arguments.ts";

type Raw = Record<string, unknown> | undefined;

export type CallIdLocation = {
  identity: Exclude<ClientManifest["mcp_identity"], "none">;
  /** The place named in an error about it. */
  where: string;
  read: (meta: Raw, args: Raw) => unknown;
};

export const callIdLocations: readonly CallIdLocation[] = [
  {
    identity: "meta_claudecode_toolUseId",
    where: '_meta["claudecode/toolUseId"]',
    read: (meta) => meta?.["claudecode/toolUseId"],
  },
  { identity: "meta_callId", where: "_meta.callId", read: (meta) => meta?.callId },
  {
    identity: "plugin_call_id",
    where: `arguments.${callIdArgument}`,
    read: (_meta, args) => args?.[callIdArgument],
  },
];
