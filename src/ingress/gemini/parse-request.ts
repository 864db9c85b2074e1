/**
 * Validates a GenerateContent body against schema.ts; the first problem is a 400
 * naming the field in wire spelling (`contents[2].parts[0].fileData`), so the
 * client — or whoever reads the records — knows exactly what the sidecar refused.
 */
import type { JsonBody } from "../../body/parse-json-body.ts";
import { parseRequestBody } from "../parse-at.ts";
import { type GenerateContentRequest, generateContentRequestSchema } from "./schema.ts";

export function parseRequest(body: JsonBody): GenerateContentRequest {
  return parseRequestBody(generateContentRequestSchema, body, "Gemini GenerateContent");
}
