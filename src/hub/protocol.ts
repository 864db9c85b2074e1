/**
 * The client protocols the sidecar speaks, one ingress spoke each around the hub:
 * OpenAI Responses, Gemini GenerateContent, Anthropic Messages. Spelled here once;
 * the ingress routes, the records and the client manifests all name a protocol by it.
 */
import { z } from "zod";

export const protocolSchema = z.enum(["responses", "gemini", "messages"]);
export type Protocol = z.infer<typeof protocolSchema>;
