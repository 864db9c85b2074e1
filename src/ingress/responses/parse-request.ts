/**
 * Validates a Responses request body against schema.ts; the first problem is a
 * 400 naming the field in wire spelling (`input[3].content[0].type`).
 */
import type { JsonBody } from "../../body/parse-json-body.ts";
import { parseRequestBody } from "../parse-at.ts";
import { type ResponsesRequest, responsesRequestSchema } from "./schema.ts";

export function parseRequest(body: JsonBody): ResponsesRequest {
  return parseRequestBody(responsesRequestSchema, body, "OpenAI Responses");
}
