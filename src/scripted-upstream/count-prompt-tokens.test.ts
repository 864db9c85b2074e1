import { expect, test } from "bun:test";
import { countPromptTokens } from "./create-scripted-upstream.ts";

test("an image counts by its patches, not by its base64 length; text at ~4 characters a token", () => {
  const text = JSON.stringify({ messages: [{ role: "user", content: "x".repeat(400) }] });
  const image = `data:image/webp;base64,${"A".repeat(500_000)}`;
  const withImage = JSON.stringify({ messages: [{ role: "user", content: "x".repeat(400) }], image });
  expect(countPromptTokens(text)).toBe(Math.ceil(text.length / 4));
  expect(countPromptTokens(withImage) - Math.ceil((withImage.length - image.length) / 4)).toBe(1200);
});
