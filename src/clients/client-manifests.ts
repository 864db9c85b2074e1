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
import { protocolSchema } from "../hub/protocol.ts";

export const clientNames = ["opencode", "gemini", "claude", "codex"] as const;
export const clientNameSchema = z.enum(clientNames);
export type ClientName = z.infer<typeof clientNameSchema>;

export const clientManifestSchema = z
  .object({
    client: clientNameSchema,
    package: z.string(),
    /** The pin: what `make clients` installs, the fixtures were recorded with, the kits are written for. */
    version: z.string(),
    /**
     * Every version with which every end-to-end test that runs the client passed (docs/compatibility.md), the
     * pin among them: `require_pinned_client` accepts each, and the episode status and
     * `client-config` say when a client is none of them.
     */
    proven_versions: z.array(z.string()).min(1),
    bin: z.string(),
    protocol: protocolSchema,
    user_agent_pattern: z.string(),
    mcp_user_agent_pattern: z.string(),
    /**
     * Request headers in which the client sends its own session (conversation) id on
     * model requests, first present wins; empty when it sends none (Gemini CLI with an
     * API key). The episode keeps the ids, so a lab can find the client's own logs.
     */
    session_headers: z.array(z.string().regex(/^[a-z0-9-]+$/, "a lower-case header name")),
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
  })
  .refine((m) => m.proven_versions.includes(m.version), {
    path: ["proven_versions"],
    message: "the pinned version must be one of the proven versions",
  });
export type ClientManifest = z.infer<typeof clientManifestSchema>;

export const clientManifests: Record<ClientName, ClientManifest> = {
  opencode: clientManifestSchema.parse(opencodeJson),
  gemini: clientManifestSchema.parse(geminiJson),
  claude: clientManifestSchema.parse(claudeJson),
  codex: clientManifestSchema.parse(codexJson),
};
