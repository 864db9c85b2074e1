import { expect, test } from "bun:test";
import type { HubRequest } from "../hub/schema.ts";
import { estimateTokens, measureJsonBytes } from "./estimate.ts";

const request = (text: string): HubRequest => ({
  model: "m",
  messages: [{ role: "user", content: [{ type: "text", text }] }],
  tools: [],
  ignored: [],
});

test("the estimate is UTF-8 JSON bytes divided by 4, rounded up", () => {
  const ascii = request("hello");
  const bytes = JSON.stringify(ascii).length;
  expect(estimateTokens(ascii)).toBe(Math.ceil(bytes / 4));
  // "ü" is 2 bytes and "😀" 4 in UTF-8, but 1 and 2 UTF-16 units.
  const wide = request("ü😀");
  expect(measureJsonBytes(wide)).toBe(bytes - 5 + 6);
  expect(estimateTokens(wide)).toBe(Math.ceil((bytes + 1) / 4));
});

test("images count by their base64 length as sent", () => {
  const small: HubRequest = { ...request("x"), messages: [{ role: "user", content: [{ type: "image", mediaType: "image/png", data: "" }] }] };
  const large: HubRequest = { ...request("x"), messages: [{ role: "user", content: [{ type: "image", mediaType: "image/png", data: "A".repeat(4000) }] }] };
  expect(estimateTokens(large) - estimateTokens(small)).toBe(1000);
});
