/**
 * Validates a Messages request body against schema.ts; the first problem is a
 * 400 naming the field in wire spelling (`messages[2].content[0].source.type`).
 */
import type { JsonBody } from "../../body/parse-json-body.ts";
import { parseRequestBody } from "../parse-at.ts";
import { type MessagesRequest, messagesRequestSchema } from "./schema.ts";

export function parseRequest(body: JsonBody): MessagesRequest {
  return parseRequestBody(messagesRequestSchema, body, "Anthropic Messages");
}
