/**
 * What a kit is written from: an episode's launch info, as `POST /control/episodes`
 * returns it (credentials included). Only the fields kits use; the rest is kept.
 */
import { z } from "zod";
import { modelCapabilitiesSchema } from "../models/model-capabilities.ts";

export const launchInfoSchema = z.looseObject({
  id: z.string().min(1),
  urls: z.object({
    responses: z.string().min(1),
    gemini: z.string().min(1),
    anthropic: z.string().min(1),
    mcp: z.string().min(1),
  }),
  ingress_key: z.string().min(1),
  mcp_token: z.string().min(1),
  /** The episode's upstream model: Gemini CLI must name it exactly (`-m`). */
  model: z.string().min(1).optional(),
  /**
   * The longest the sidecar may hold one MCP `tools/call` (src/config/tool-call-wait.ts):
   * each kit sets its client's tool-call timeout to it. Absent in launch info from an
   * older sidecar: kits then use the documented defaults' value.
   */
  tool_call_timeout_ms: z.number().int().positive().optional(),
  /**
   * The longest one model exchange may take (upstream.deadline_ms): each kit sets its
   * client's wait for a model answer above it where the client lets it (docs/clients.md).
   * Absent in launch info from an older sidecar: the default deadline.
   */
  model_deadline_ms: z.number().int().positive().optional(),
  /**
   * What the episode's model can do (src/models): each kit tells its client the window
   * and output limit from it. Absent in launch info from an older sidecar: kits then
   * tell nothing and the client keeps its own assumptions.
   */
  model_capabilities: modelCapabilitiesSchema.optional(),
});
export type LaunchInfo = z.infer<typeof launchInfoSchema>;
