/**
 * Gemini structured output (`generationConfig.responseMimeType` with
 * `responseSchema` or `responseJsonSchema`) → the hub's response format (pure):
 * application/json with a schema is json_schema, without one json_object; a schema
 * without application/json, or another mime type, is a 400 naming the field.
 */
import type { HubRequest } from "../../hub/schema.ts";
import { invalidField } from "../../lib/errors.ts";
import type { IgnoredFields } from "../ignored-fields.ts";
import type { GenerateContentRequest } from "./schema.ts";
import { toJsonSchema } from "./to-json-schema.ts";

export function convertResponseFormat(
  request: GenerateContentRequest,
  notes: IgnoredFields,
): HubRequest["responseFormat"] {
  const config = request.generationConfig;
  if (!config) return undefined;
  const param = "generationConfig";
  if (config.responseJsonSchema && config.responseSchema) {
    throw invalidField(
      `${param}.responseSchema`,
      "give either responseSchema or responseJsonSchema, not both",
    );
  }
  const ignored: string[] = [];
  const schema =
    config.responseJsonSchema ??
    (config.responseSchema
      ? toJsonSchema(config.responseSchema, `${param}.responseSchema`, ignored)
      : undefined);
  for (const note of ignored) notes.add(note);
  const mime = config.responseMimeType ?? "text/plain";
  if (mime === "application/json") return schema ? { type: "json_schema", schema } : { type: "json_object" };
  if (mime !== "text/plain")
    throw invalidField(
      `${param}.responseMimeType`,
      `unsupported ${JSON.stringify(mime)}; use text/plain or application/json`,
    );
  if (schema)
    throw invalidField(
      `${param}.responseMimeType`,
      "a response schema needs responseMimeType application/json",
    );
  return undefined;
}
