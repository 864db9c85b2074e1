/**
 * A tool manifest: the robot tools an episode serves over MCP. Lives in
 * manifests/tools/*.json; the default one is embedded in the binary. Each tool may
 * carry a policy (src/manifest/tool-policy.ts, docs/approvals.md): whether a person
 * must approve a call before it runs, and how often it may run.
 */
import { z } from "zod";
import { privateArgumentKeys } from "../clients/private-arguments.ts";

/**
 * `never` (the default when absent), `always`, or `{when: <JSON Schema>}`: a call
 * needs approval when its arguments are valid against that schema. A condition is
 * data checked by the JSON Schema validator, never code that runs.
 */
export const toolApprovalSchema = z.union([
  z.enum(["never", "always"]),
  z.object({ when: z.record(z.string(), z.unknown()) }).strict(),
]);
export type ToolApproval = z.infer<typeof toolApprovalSchema>;

/** Per episode and tool: at most `per_minute` calls in any 60 s, at least `min_interval_ms` between two. */
export const toolRateSchema = z
  .object({
    per_minute: z.number().int().positive().optional(),
    min_interval_ms: z.number().int().positive().optional(),
  })
  .strict()
  .refine((rate) => rate.per_minute !== undefined || rate.min_interval_ms !== undefined, {
    message: "name per_minute, min_interval_ms or both",
  });
export type ToolRate = z.infer<typeof toolRateSchema>;

export const manifestToolSchema = z
  .object({
    name: z.string().regex(/^[a-z][a-z0-9_]*$/, "lower-case letters, digits and _"),
    description: z.string(),
    input_schema: z.record(z.string(), z.unknown()),
    /** foreground: the callback returns the receipt; background: it returns on acknowledgement. */
    mode: z.enum(["foreground", "background"]).default("foreground"),
    /** The executor route this tool submits to. */
    route: z.string().min(1),
    /** Whether a person must approve a call before it runs; absent = never. */
    approval: toolApprovalSchema.optional(),
    /** How often the tool may run in one episode; absent = no limit. */
    rate: toolRateSchema.optional(),
  })
  .strict()
  .superRefine((tool, ctx) => {
    const properties = tool.input_schema.properties;
    if (typeof properties !== "object" || properties === null) return;
    for (const key of privateArgumentKeys) {
      if (Object.hasOwn(properties, key))
        ctx.addIssue({
          code: "custom",
          path: ["input_schema", "properties", key],
          message: `${key} is a client-private argument (a client adds or strips it), so a tool cannot declare it`,
        });
    }
  });

/**
 * Stopping robot work nobody wants any more (docs/executor-api.md, "stop"): present =
 * the executor is asked to stop the episode's jobs in flight on cancel, deadline,
 * shutdown drain overrun, and when the client is gone for `abandon_grace_ms`.
 */
export const stopPolicySchema = z
  .object({ abandon_grace_ms: z.number().int().positive().default(30_000) })
  .strict();

export const manifestSchema = z
  .object({
    server: z.string().default("ura"),
    finish_tool: z.string(),
    tools: z.array(manifestToolSchema).min(1),
    /** Absent (the default): the sidecar never asks the executor to stop a job. */
    stop: stopPolicySchema.optional(),
  })
  .strict()
  .refine((m) => m.tools.some((t) => t.name === m.finish_tool), {
    message: "finish_tool must name one of the tools",
    path: ["finish_tool"],
  })
  .refine((m) => new Set(m.tools.map((t) => t.name)).size === m.tools.length, {
    message: "tool names must be unique",
    path: ["tools"],
  });

export type Manifest = z.infer<typeof manifestSchema>;
