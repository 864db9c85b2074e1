/**
 * The pinned clients (manifests/clients/*.json), embedded in the binary: package,
 * exact version, how each identifies itself on model and MCP requests, and the
 * name under which it shows the model an MCP tool. Kits, version pins, client
 * detection, tool-name mapping and `validate` all read them from here.
 */
import { z } from "zod";
import claudeJson from "../../manifests/clients/claude.json" with { type: "json" };
import codexJson from "../../manifests/clients/codex.json" with { type: "json" };
import geminiJson from "../../manifests/clients/gemini.json" with { type: "json" };
import opencodeJson from "../../manifests/clients/opencode.json" with { type: "json" };

export const clientNames = ["opencode", "gemini", "claude", "codex"] as const;
export const clientNameSchema = z.enum(clientNames);
export type ClientName = z.infer<typeof clientNameSchema>;

export const clientManifestSchema = z.object({
  client: clientNameSchema,
  package: z.string(),
  version: z.string(),
  bin: z.string(),
  protocol: z.enum(["responses", "gemini", "messages"]),
  user_agent_pattern: z.string(),
  mcp_user_agent_pattern: z.string(),
  mcp_identity: z.enum(["plugin_call_id", "none", "meta_claudecode_toolUseId", "meta_callId"]),
  /**
   * The name the model sees for an MCP tool: `{server}` and `{tool}` are replaced
   * (Codex declares the namespace `mcp__{server}`, which the Responses ingress
   * flattens to `mcp__{server}__{tool}`). tool-names.ts maps names back with it.
   */
  tool_name_scheme: z
    .string()
    .regex(/^[a-z_]*\{server\}[a-z_]*\{tool\}$/, "a prefix around {server}, then {tool} at the end"),
  /**
   * What the client does with the images of a failed MCP tool result (measured
   * with the pinned version): `kept` (sent to the model under the failed call),
   * `dropped` (only the failure text reaches the model, so the sidecar answers
   * such results in a form the client keeps), `in_error_text` (written, base64
   * included, into an error string, which the ingress lifts back into images).
   */
  failed_result_images: z.enum(["kept", "dropped", "in_error_text"]),
});
export type ClientManifest = z.infer<typeof clientManifestSchema>;

export const clientManifests: Record<ClientName, ClientManifest> = {
  opencode: clientManifestSchema.parse(opencodeJson),
  gemini: clientManifestSchema.parse(geminiJson),
  claude: clientManifestSchema.parse(claudeJson),
  codex: clientManifestSchema.parse(codexJson),
};
