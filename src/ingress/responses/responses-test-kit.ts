/**
 * What the Responses renderers need in tests (tests only): the render context of a
 * client body, read the way the route reads it (the request as parsed, the tools it
 * offered and their model-visible names), with fixed ids and times.
 */
import { jsonBodyOf } from "../../lib/parse-json-body.ts";
import type { RenderContext } from "./from-hub.ts";
import { parseRequest } from "./parse-request.ts";
import { readTools } from "./read-tools.ts";

export function renderContextFor(
  body: Record<string, unknown>,
  at: { responseId: string; createdAt: number; completedAt: number },
): RenderContext {
  const request = parseRequest(jsonBodyOf(body));
  const tools = readTools(request.tools ?? []);
  return { ...at, request, offeredTools: tools.offered, names: tools.names };
}
