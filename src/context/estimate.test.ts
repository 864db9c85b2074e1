import { expect, test } from "bun:test";
import fc from "fast-check";
import type { HubRequest } from "../hub/schema.ts";
import { estimateTokens, measureJsonBytes, measureMessageBytes, measureRequestBytes } from "./estimate.ts";
import { hubRequestArbitrary } from "./history-arbitrary.ts";

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
  const small: HubRequest = {
    ...request("x"),
    messages: [{ role: "user", content: [{ type: "image", mediaType: "image/png", data: "" }] }],
  };
  const large: HubRequest = {
    ...request("x"),
    messages: [
      { role: "user", content: [{ type: "image", mediaType: "image/png", data: "A".repeat(4000) }] },
    ],
  };
  expect(estimateTokens(large) - estimateTokens(small)).toBe(1000);
});

test("summing per message gives exactly the bytes of the whole request's JSON", () => {
  fc.assert(
    fc.property(hubRequestArbitrary, (request) => {
      const whole = Buffer.byteLength(JSON.stringify(request), "utf8");
      expect(measureRequestBytes(request)).toBe(whole);
      expect(estimateTokens(request)).toBe(Math.ceil(whole / 4));
    }),
    { numRuns: 200 },
  );
  expect(measureRequestBytes({ ...request("x"), messages: [] })).toBe(
    JSON.stringify({ ...request("x"), messages: [] }).length,
  );
});

test("a message's bytes are measured without serialising its images, and equal the JSON's", () => {
  const message = {
    role: "tool" as const,
    toolCallId: "call_1",
    name: "observe",
    content: [
      { type: "text" as const, text: 'frame "1" é' },
      { type: "image" as const, mediaType: "image/png", data: "iVBORw0KGgo+/==" },
      // Not base64 (would need escaping): measured by serialising it.
      { type: "image" as const, mediaType: "image/png", data: 'bad"\n' },
    ],
  };
  expect(measureMessageBytes(message)).toBe(Buffer.byteLength(JSON.stringify(message)));
});
