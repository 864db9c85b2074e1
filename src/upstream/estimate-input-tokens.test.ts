import { expect, test } from "bun:test";
import { maxImageTokens } from "../models/image-tokens.ts";
import type { ChatRequest } from "./chat-schema.ts";
import { estimateInputTokens } from "./estimate-input-tokens.ts";

const chat = (content: ChatRequest["messages"][number]["content"]): ChatRequest => ({
  model: "qwen3-vl-plus",
  messages: [{ role: "user", content } as ChatRequest["messages"][number]],
  enable_thinking: false,
  stream: true,
  stream_options: { include_usage: true },
});

test("text counts its JSON length / 4; an image its patches, not its base64", () => {
  const text = chat("describe the scene");
  const body = JSON.stringify(text);
  expect(estimateInputTokens(text, body.length)).toBe(Math.ceil(body.length / 4));

  const frame = `data:image/webp;base64,${"A".repeat(400_000)}`;
  const withImages = chat([
    { type: "text", text: "two frames" },
    { type: "image_url", image_url: { url: frame } },
    { type: "image_url", image_url: { url: frame } },
  ]);
  const imageBody = JSON.stringify(withImages);
  const estimate = estimateInputTokens(withImages, imageBody.length);
  expect(estimate).toBe(Math.ceil((imageBody.length - 2 * frame.length) / 4) + 2 * maxImageTokens);
  expect(estimate).toBeLessThan(3_000);
});
