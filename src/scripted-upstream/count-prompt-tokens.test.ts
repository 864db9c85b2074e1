import { expect, test } from "bun:test";
import { solidColourPng } from "../images/generate-png.ts";
import { maxImageTokens, tokensForPixels } from "../models/image-tokens.ts";
import { countPromptTokens } from "./create-scripted-upstream.ts";

const textTokensOf = (body: string, image: string) => Math.ceil((body.length - image.length) / 4);

test("an image counts by its patches, not by its base64 length; text at ~4 characters a token", () => {
  const text = JSON.stringify({ messages: [{ role: "user", content: "x".repeat(400) }] });
  const image = `data:image/webp;base64,${"A".repeat(500_000)}`;
  const withImage = JSON.stringify({ messages: [{ role: "user", content: "x".repeat(400) }], image });
  expect(countPromptTokens(text)).toBe(Math.ceil(text.length / 4));
  // No readable header: the most an image costs.
  expect(countPromptTokens(withImage) - textTokensOf(withImage, image)).toBe(maxImageTokens);
});

test("a real frame counts by its pixel size, as Model Studio counts it", () => {
  for (const [width, height] of [
    [1280, 720],
    [64, 48],
  ] as const) {
    const image = `data:image/png;base64,${Buffer.from(solidColourPng(width, height, [9, 9, 9])).toString("base64")}`;
    const body = JSON.stringify({ messages: [{ role: "user", content: [{ image_url: { url: image } }] }] });
    expect(countPromptTokens(body) - textTokensOf(body, image)).toBe(tokensForPixels(width, height));
  }
});
