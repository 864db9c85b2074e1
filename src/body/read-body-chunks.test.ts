import { expect, test } from "bun:test";
import { BodyOverLimitError, declaredBodyLength, readBodyText } from "./read-body-chunks.ts";
import { readSplitJson } from "./split-json-bytes.ts";

/** An endless body of 1 KiB chunks; `state` tells how many were pulled and whether the reader cancelled. */
function endlessBody() {
  const state = { pulled: 0, cancelled: undefined as unknown };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      state.pulled += 1;
      controller.enqueue(new Uint8Array(1024).fill(0x20));
    },
    cancel(reason) {
      state.cancelled = reason;
    },
  });
  return { stream, state };
}

test("a body passing its limit rejects at that chunk and cancels the stream, split or as text", async () => {
  for (const read of [readBodyText, readSplitJson]) {
    const { stream, state } = endlessBody();
    const error = await read(stream, { limitBytes: 10 * 1024 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BodyOverLimitError);
    expect((error as Error).message).toBe("request body over the limit of 10240 bytes (body_limit_bytes)");
    expect(state.cancelled).toBe(error);
    // The one chunk past the limit, and whatever the stream's queue had pulled ahead.
    expect(state.pulled).toBeLessThanOrEqual(12);
  }
});

test("a body at its limit is read whole, decoded as Request.text() decodes it", async () => {
  const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"é":1}'), 0xff]);
  const asText = await new Request("http://x", { method: "POST", body: bytes }).text();
  const stream = new Response(bytes).body as ReadableStream<Uint8Array>;
  expect(await readBodyText(stream, { limitBytes: bytes.length })).toBe(asText);
});

test("only a content-length without transfer-encoding is a declared length", () => {
  const request = (headers: Record<string, string>) => new Request("http://x", { headers });
  expect(declaredBodyLength(request({ "content-length": "12" }))).toBe(12);
  expect(declaredBodyLength(request({}))).toBeUndefined();
  expect(
    declaredBodyLength(request({ "content-length": "12", "transfer-encoding": "chunked" })),
  ).toBeUndefined();
  expect(declaredBodyLength(request({ "content-length": "-1" }))).toBeUndefined();
});
