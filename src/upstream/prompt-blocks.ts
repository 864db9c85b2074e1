/**
 * A Chat Completions request as the provider's context cache sees it: the prompt the
 * model's chat template renders (the tool declarations, then the messages in order),
 * cut into content blocks, each with a digest of its content, its tokens and whether it
 * carries an explicit `cache_control` marker.
 *
 * Model Studio's context cache serves only an unchanged prefix of that prompt, and its
 * explicit markers are counted in content blocks (at most 4 markers, each looking back
 * at most 20 blocks, at least 1024 tokens; docs/prompt-cache.md). So the sidecar places
 * its markers on these blocks, the scripted upstream emulates the cache over them, and
 * cache efficiency is measured over them — one definition of "the prompt" for all three.
 *
 * A block: a message's string content, or one part of its content array; an assistant
 * message's text and tool calls are one block; the tool list is one block. A block's
 * digest covers its role, whether it opens its message, the call it answers and its
 * content (a text part as its text, the same as string content), never its marker (a marker does not change what the model reads). Tokens are
 * an estimate, as the scripted upstream counts them: text at ~4 characters a token, an
 * image by its patches (src/models/image-tokens.ts, from its pixel size), not by its base64 length.
 */
import { imageUrlTokens } from "../models/image-tokens.ts";

export interface PromptBlock {
  /** Digest of what the model reads in this block (and where it stands in its message). */
  digest: string;
  tokens: number;
  /** Carries `cache_control: {"type":"ephemeral"}`. */
  marked: boolean;
  /** Where it is: its message's index (-1: the tool list) and its part's (-1: the message's whole content). */
  message: number;
  part: number;
}

type LooseMessage = {
  role?: unknown;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
};

const textTokens = (text: string) => Math.ceil(text.length / 4);

function hashOf(text: string): string {
  return Bun.hash(text).toString(36);
}

/** Whether a content part carries an explicit cache marker. */
export function hasCacheMarker(part: unknown): boolean {
  const control = (part as { cache_control?: { type?: unknown } } | null)?.cache_control;
  return typeof control === "object" && control !== null && control.type === "ephemeral";
}

function blockOfPart(
  digestOf: (text: string) => string,
  head: string,
  part: unknown,
  message: number,
  index: number,
): PromptBlock {
  const marked = hasCacheMarker(part);
  const { cache_control: _marker, ...content } = (part ?? {}) as Record<string, unknown>;
  const url = (content.image_url as { url?: unknown } | undefined)?.url;
  if (content.type === "image_url" && typeof url === "string") {
    // The data URL itself is digested: no second copy of megabytes of base64.
    const digest = digestOf(`${head}|image|${digestOf(url)}`);
    return { digest, tokens: imageUrlTokens(url), marked, message, part: index };
  }
  // A text part reads as the same text in string content (a marker turns one into the other).
  const text =
    content.type === "text" && typeof content.text === "string" ? content.text : JSON.stringify(content);
  return { digest: digestOf(`${head}|${text}`), tokens: textTokens(text), marked, message, part: index };
}

/** The blocks of a Chat Completions request body (parsed JSON), in the order the template renders them. */
export function listPromptBlocks(
  body: { tools?: unknown; messages?: unknown },
  options: { digests?: boolean } = {},
): PromptBlock[] {
  // Without digests (only tokens and places are needed), nothing is hashed.
  const digestOf = options.digests === false ? () => "" : hashOf;
  const partBlock = (head: string, part: unknown, message: number, index: number) =>
    blockOfPart(digestOf, head, part, message, index);
  const blocks: PromptBlock[] = [];
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    const json = JSON.stringify(body.tools);
    const digest = digestOf(`tools|${json}`);
    blocks.push({ digest, tokens: textTokens(json), marked: false, message: -1, part: -1 });
  }
  const messages = Array.isArray(body.messages) ? (body.messages as LooseMessage[]) : [];
  messages.forEach((message, m) => {
    const role = String(message.role);
    const answers = typeof message.tool_call_id === "string" ? message.tool_call_id : "";
    const head = (first: boolean) => `${role}|${first ? "open" : "more"}|${answers}`;
    if (role === "assistant") {
      const json = JSON.stringify([message.content ?? null, message.tool_calls ?? null]);
      const digest = digestOf(`${head(true)}|${json}`);
      blocks.push({ digest, tokens: textTokens(json), marked: false, message: m, part: -1 });
      return;
    }
    if (Array.isArray(message.content)) {
      message.content.forEach((part, i) => {
        blocks.push(partBlock(head(i === 0), part, m, i));
      });
      return;
    }
    const text =
      typeof message.content === "string" ? message.content : JSON.stringify(message.content ?? null);
    const digest = digestOf(`${head(true)}|${text}`);
    blocks.push({ digest, tokens: textTokens(text), marked: false, message: m, part: -1 });
  });
  return blocks;
}
