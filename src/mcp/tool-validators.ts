/**
 * JSON-schema validators for a manifest's tool inputs, compiled once per
 * manifest with the MCP SDK's own Ajv provider (the SDK already depends on ajv,
 * so this adds no package). The schema is used exactly as the manifest states it.
 */

import type { JsonSchemaType } from "@modelcontextprotocol/sdk/validation";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { Manifest } from "../manifest/manifest-schema.ts";

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
