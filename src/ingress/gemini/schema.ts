/**
 * The Gemini GenerateContent request as Gemini CLI sends it — only the fields we
 * translate, and strict: any other field is refused with a 400 naming it, never
 * silently dropped. Fields that only tune Google's service are accepted and listed
 * as ignored by `to-hub.ts` (`thinkingConfig`, `safetySettings`).
 * Spec: https://ai.google.dev/api/generate-content#request-body
 *       https://ai.google.dev/api/caching#Content
 */
import { z } from "zod";
import { frameTextSchema } from "../../lib/known-frame.ts";

const blobSchema = z.strictObject({ mimeType: z.string(), data: frameTextSchema });

export const functionCallSchema = z.strictObject({
  id: z.string().min(1).optional(),
  name: z.string().min(1),
  args: z.record(z.string(), z.unknown()).optional(),
});

export const functionResponseSchema = z.strictObject({
  id: z.string().min(1).optional(),
  name: z.string().min(1),
  response: z.record(z.string(), z.unknown()),
  /** Multimodal function responses (newer API): images carried inside the response. */
  parts: z.array(z.strictObject({ inlineData: blobSchema })).optional(),
});

/** One part: exactly one of text, inlineData, functionCall, functionResponse (checked in to-hub). */
export const partSchema = z.strictObject({
  text: z.string().optional(),
  inlineData: blobSchema.optional(),
  functionCall: functionCallSchema.optional(),
  functionResponse: functionResponseSchema.optional(),
  /** Only Gemini CLI's placeholder is accepted; we hold no Google reasoning state. */
  thoughtSignature: z.string().optional(),
});
export type Part = z.infer<typeof partSchema>;

export const contentSchema = z.strictObject({
  role: z.enum(["user", "model"]).optional(),
  parts: z.array(partSchema),
});
export type Content = z.infer<typeof contentSchema>;

export const functionDeclarationSchema = z.strictObject({
  name: z.string().min(1),
  description: z.string().optional(),
  /** OpenAPI-style Gemini Schema (upper-case types); converted to JSON Schema. */
  parameters: z.record(z.string(), z.unknown()).optional(),
  /** Plain JSON Schema (what Gemini CLI sends); forwarded unchanged but for `wait_for_previous`. */
  parametersJsonSchema: z.record(z.string(), z.unknown()).optional(),
});
export type FunctionDeclaration = z.infer<typeof functionDeclarationSchema>;

export const toolSchema = z.strictObject({ functionDeclarations: z.array(functionDeclarationSchema) });

export const toolConfigSchema = z.strictObject({
  functionCallingConfig: z
    .strictObject({
      mode: z.enum(["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE"]).optional(),
      allowedFunctionNames: z.array(z.string()).optional(),
    })
    .optional(),
});

export const generationConfigSchema = z.strictObject({
  temperature: z.number().optional(),
  topP: z.number().optional(),
  topK: z.number().int().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  stopSequences: z.array(z.string()).optional(),
  candidateCount: z.literal(1, { error: "only candidateCount 1 is supported" }).optional(),
  responseMimeType: z.string().optional(),
  responseJsonSchema: z.record(z.string(), z.unknown()).optional(),
  responseSchema: z.record(z.string(), z.unknown()).optional(),
  /** Accepted, not forwarded: upstream runs with thinking disabled. */
  thinkingConfig: z.record(z.string(), z.unknown()).optional(),
});
export type GenerationConfig = z.infer<typeof generationConfigSchema>;

export const generateContentRequestSchema = z.strictObject({
  contents: z.array(contentSchema).min(1),
  systemInstruction: contentSchema.extend({ role: z.string().optional() }).optional(),
  tools: z.array(toolSchema).optional(),
  toolConfig: toolConfigSchema.optional(),
  generationConfig: generationConfigSchema.optional(),
  /** Accepted, not forwarded: Google's safety filters have no upstream counterpart. */
  safetySettings: z.array(z.unknown()).optional(),
});
export type GenerateContentRequest = z.infer<typeof generateContentRequestSchema>;
