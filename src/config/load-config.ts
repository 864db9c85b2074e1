/**
 * Merges the config sources — JSON file < environment < flags — and parses the
 * result with the one schema. Every problem is reported with its key path, all
 * at once, so `serve --validate-config` can list them.
 */
import { readFileSync } from "node:fs";
import { type ZodError, z } from "zod";
import { errorMessage } from "../lib/error-message.ts";
import { type Config, configSchema } from "./schema.ts";

export type ConfigFlags = {
  config?: string;
  listen?: string;
  "data-dir"?: string;
  model?: string;
  "upstream-url"?: string;
  "log-level"?: string;
  "default-episode"?: boolean;
  "context-policy"?: string;
  "upstream-profile"?: string;
};

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

type Json = Record<string, unknown>;

/** Environment variables that map to settings (secrets are read elsewhere). */
const envKeys: Record<string, string[]> = {
  URA_UPSTREAM_URL: ["upstream", "url"],
  URA_MODEL: ["upstream", "model"],
  URA_LISTEN: ["listen"],
  URA_DATA_DIR: ["data_dir"],
  URA_LOG_LEVEL: ["log_level"],
  URA_CONTEXT_POLICY: ["context", "policy"],
  URA_UPSTREAM_PROFILE: ["upstream", "scripted_profile"],
  URA_SHIPPING_ENDPOINT: ["shipping", "endpoint"],
  URA_SHIPPING_BUCKET: ["shipping", "bucket"],
  URA_SHIPPING_PREFIX: ["shipping", "prefix"],
  URA_SHIPPING_SOURCE: ["shipping", "source"],
};

const flagKeys: Record<string, string[]> = {
  listen: ["listen"],
  "data-dir": ["data_dir"],
  model: ["upstream", "model"],
  "upstream-url": ["upstream", "url"],
  "log-level": ["log_level"],
  "default-episode": ["default_episode"],
  "context-policy": ["context", "policy"],
  "upstream-profile": ["upstream", "scripted_profile"],
};

function setPath(target: Json, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== "object" || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Json;
  }
  node[path[path.length - 1] as string] = value;
}

/**
 * Sets one value from the environment or a flag. A context policy given by name
 * replaces a file's `context` of another policy whole: that policy's settings
 * (e.g. sliding_window's max_input_tokens) are unknown keys of the named one, which
 * takes its own defaults. The same name keeps the file's settings.
 */
function setOverride(target: Json, path: string[], value: unknown): void {
  const context = target.context;
  const otherPolicy =
    path.join(".") === "context.policy" &&
    typeof context === "object" &&
    context !== null &&
    !Array.isArray(context) &&
    (context as Json).policy !== value;
  if (otherPolicy) target.context = {};
  setPath(target, path, value);
}

function readConfigFile(path: string): Json {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError([`--config ${path}: cannot read (${errorMessage(error)})`]);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError([`--config ${path}: not valid JSON (${errorMessage(error)})`]);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError([`--config ${path}: expected a JSON object at the top level`]);
  }
  return parsed as Json;
}

export function describeZodError(error: ZodError, prefix = ""): string[] {
  return error.issues.map((issue) => {
    const key = [prefix, ...issue.path.map(String)].filter(Boolean).join(".") || "(root)";
    if (issue.code === "unrecognized_keys") {
      return `${[key === "(root)" ? "" : key, issue.keys.join(", ")].filter(Boolean).join(".")}: unknown key`;
    }
    return `${key}: ${issue.message}`;
  });
}

export function loadConfig(flags: ConfigFlags, env: Record<string, string | undefined>): Config {
  const merged: Json = flags.config ? readConfigFile(flags.config) : {};
  for (const [name, path] of Object.entries(envKeys)) {
    const value = env[name];
    if (value !== undefined && value !== "") setOverride(merged, path, value);
  }
  for (const [name, path] of Object.entries(flagKeys)) {
    const value = flags[name as keyof ConfigFlags];
    if (value !== undefined) setOverride(merged, path, value);
  }
  const result = configSchema.safeParse(merged);
  if (!result.success) throw new ConfigError(describeZodError(result.error));
  return result.data;
}

/** Listen address split for Bun.serve. */
export function parseListen(listen: string): { hostname: string; port: number } {
  const at = listen.lastIndexOf(":");
  return { hostname: listen.slice(0, at), port: Number(listen.slice(at + 1)) };
}

export const secretsSchema = z.object({
  upstreamApiKey: z.string().optional(),
  controlPassword: z.string().optional(),
});
export type Secrets = z.infer<typeof secretsSchema>;

/** Secrets come only from the environment — never flags, files or records. */
export function readSecrets(env: Record<string, string | undefined>): Secrets {
  return {
    upstreamApiKey: env.URA_UPSTREAM_API_KEY || undefined,
    controlPassword: env.URA_CONTROL_PASSWORD || undefined,
  };
}
