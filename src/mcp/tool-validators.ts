/**
 * JSON-schema validators for a manifest's tool inputs, compiled once per
 * manifest with the MCP SDK's own Ajv provider (the SDK already depends on ajv,
 * so this adds no package). The schema is used exactly as the manifest states it.
 */

import type { JsonSchemaType } from "@modelcontextprotocol/sdk/validation";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { errorMessage } from "../lib/error-message.ts";
import type { Manifest } from "../manifest/manifest-schema.ts";
import { approvalProblem } from "../manifest/tool-policy.ts";

export type ArgumentsCheck = (args: unknown) => { valid: true } | { valid: false; message: string };

export function compileToolValidators(manifest: Manifest): Map<string, ArgumentsCheck> {
  const provider = new AjvJsonSchemaValidator();
  const checks = new Map<string, ArgumentsCheck>();
  for (const tool of manifest.tools) {
    const validate = provider.getValidator(tool.input_schema as JsonSchemaType);
    checks.set(tool.name, (args) => {
      const result = validate(args);
      return result.valid ? { valid: true } : { valid: false, message: result.errorMessage };
    });
  }
  return checks;
}

/**
 * The validators of a manifest, compiled on first use and kept as long as the
 * manifest object lives: episodes created from the same manifest (the default one)
 * share one compilation. Built once per app by the composition root.
 */
export type ToolChecks = (manifest: Manifest) => ReadonlyMap<string, ArgumentsCheck>;

export function createToolChecks(): ToolChecks {
  const compiled = new WeakMap<Manifest, Map<string, ArgumentsCheck>>();
  return (manifest) => {
    let checks = compiled.get(manifest);
    if (!checks) {
      checks = compileToolValidators(manifest);
      compiled.set(manifest, checks);
    }
    return checks;
  };
}

/** Deepest nesting a tool's input schema may have (real robot schemas nest a handful of levels). */
export const maxSchemaDepth = 32;
/** Largest manifest, serialised: it is kept in the episode's description and sent in every tools/list. */
export const maxManifestBytes = 256 * 1024;

/**
 * Checks a manifest before an episode is created from it, so a bad one is a 400
 * naming the tool and the schema path instead of a 500 at MCP initialize (after
 * which the CLIs silently drop the tools): bounded size and depth, then every
 * input schema compiled as the MCP server will compile it (unknown `$ref`,
 * invalid keywords …), then every approval condition likewise. Returns the problem, or undefined.
 */
export function manifestProblem(manifest: Manifest): { param: string; message: string } | undefined {
  for (const [i, tool] of manifest.tools.entries()) {
    const deep = deepestPath(tool.input_schema, maxSchemaDepth);
    if (deep !== undefined) {
      return {
        param: `manifest.tools[${i}].input_schema`,
        message: `the input schema of tool ${tool.name} nests deeper than ${maxSchemaDepth} levels (at ${deep})`,
      };
    }
    const condition = typeof tool.approval === "object" ? tool.approval.when : undefined;
    const deepCondition = deepestPath(condition, maxSchemaDepth);
    if (deepCondition !== undefined) {
      return {
        param: `manifest.tools[${i}].approval`,
        message: `the approval condition of tool ${tool.name} nests deeper than ${maxSchemaDepth} levels (at ${deepCondition})`,
      };
    }
  }
  // Measured only once its depth is known to be small: serialising a very deep value would overflow the stack.
  const bytes = Buffer.byteLength(JSON.stringify(manifest));
  if (bytes > maxManifestBytes) {
    return { param: "manifest", message: `manifest is ${bytes} bytes, more than ${maxManifestBytes}` };
  }
  for (const [i, tool] of manifest.tools.entries()) {
    const param = `manifest.tools[${i}].input_schema`;
    try {
      new AjvJsonSchemaValidator().getValidator(tool.input_schema as JsonSchemaType);
    } catch (error) {
      return {
        param,
        message: `the input schema of tool ${tool.name} does not compile: ${errorMessage(error)}`,
      };
    }
  }
  return approvalProblem(manifest);
}

/** The JSON path of the first value nested deeper than `limit`, if any (iterative: the input may be very deep). */
function deepestPath(root: unknown, limit: number): string | undefined {
  const stack: [unknown, string, number][] = [[root, "", 0]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [value, path, depth] = next;
    if (typeof value !== "object" || value === null) continue;
    if (depth >= limit) return path || "/";
    for (const [key, item] of Object.entries(value)) stack.push([item, `${path}/${key}`, depth + 1]);
  }
  return undefined;
}
