/**
 * The size model equals the rendered body's byte length exactly, on random
 * histories and random subsets of them (what body_budget compares against a hard
 * provider limit, so "close" is not enough): texts with quotes, backslashes,
 * control characters, non-ASCII and lone surrogates; images whose data is not
 * base64; runs of tool results whose images share one user message. A rendering kept by a
 * message's key across requests (the episode's memos) measures the same body as a fresh one,
 * also when the same image is to be sent in another form.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { hubRequestArbitrary } from "../context/history-arbitrary.ts";
import type { HubImagePart, HubMessage, HubPart, HubRequest } from "../hub/schema.ts";
import { base64Length } from "../lib/base64.ts";
import { createFrozenMemos } from "../lib/frozen-memos.ts";
import { jsonStringDataBytes } from "../lib/json-bytes.ts";
import { buildChatRequest } from "./build-chat-request.ts";
import { createChatBodySizer } from "./chat-body-size.ts";

const target = { model: "qwen3-vl-plus", imageInput: true, parallelToolCalls: true, maxOutputTokens: 512 };
const rendered = (request: HubRequest) =>
  Buffer.byteLength(JSON.stringify(buildChatRequest(request, target)));
const asSent = (part: HubImagePart) => ({
  mediaType: part.mediaType,
  dataBytes: jsonStringDataBytes(part.data),
});

const awkward = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.constantFrom('"', "\\", "\n\t\u0000\u001f", "\ud800", "\udfff x", "é漢🙂", "</script>"),
);

/** The request with some texts and image data made awkward to escape, and some messages dropped. */
const variedArbitrary = fc
  .tuple(hubRequestArbitrary, fc.array(awkward, { minLength: 8, maxLength: 8 }), fc.integer())
  .map(([request, strings, seed]) => {
    let n = seed;
    const pick = () => strings[Math.abs(n++) % strings.length] as string;
    const vary = (part: HubPart, i: number): HubPart => {
      if ((i + n) % 3 !== 0) return part;
      return part.type === "text"
        ? { ...part, text: part.text + pick() }
        : { ...part, mediaType: `image/${pick()}`, data: part.data + pick() };
    };
    const messages = request.messages.map((message): HubMessage => {
      n++;
      if (message.role === "assistant") return { ...message, text: message.text === null ? null : pick() };
      if (message.role === "system") return message;
      return { ...message, content: message.content.map(vary) };
    });
    return { ...request, messages };
  });

describe("chat body size", () => {
  test("equals Buffer.byteLength(JSON.stringify(body)) for every history and every subset of it", () => {
    fc.assert(
      fc.property(variedArbitrary, fc.array(fc.boolean(), { maxLength: 200 }), (request, keep) => {
        const sizer = createChatBodySizer(request, target, asSent);
        const whole = sizer.measure(request.messages);
        expect(whole.unknown).toEqual([]);
        expect(whole.bytes).toBe(rendered(request));
        // A subset keeps some runs of tool results apart and joins others (what removing blocks does).
        const subset = request.messages.filter((_, i) => keep[i] ?? true);
        expect(sizer.measure(subset).bytes).toBe(rendered({ ...request, messages: subset }));
      }),
      { numRuns: 300 },
    );
  });

  test("an image counted in the form it will be sent in (a PNG as its WebP) measures that body; unknown ones are listed", () => {
    fc.assert(
      fc.property(hubRequestArbitrary, fc.integer({ min: 0, max: 5000 }), (request, webpBytes) => {
        const webp = "W".repeat(base64Length(webpBytes));
        const converted = {
          ...request,
          messages: request.messages.map(
            (message): HubMessage =>
              message.role === "user" || message.role === "tool"
                ? {
                    ...message,
                    content: message.content.map((part) =>
                      part.type === "image" ? { ...part, mediaType: "image/webp", data: webp } : part,
                    ),
                  }
                : message,
          ),
        };
        const asWebp = createChatBodySizer(request, target, () => ({
          mediaType: "image/webp",
          dataBytes: base64Length(webpBytes),
        }));
        expect(asWebp.measure(request.messages).bytes).toBe(rendered(converted));
        const pending = createChatBodySizer(request, target, () => ({
          mediaType: "image/webp",
          dataBytes: undefined,
        }));
        const images = request.messages.flatMap((m) =>
          m.role === "user" || m.role === "tool" ? m.content.filter((p) => p.type === "image") : [],
        );
        const measured = pending.measure(request.messages);
        expect(measured.unknown).toEqual(images);
        expect(measured.bytes).toBe(rendered(converted) - images.length * webp.length);
      }),
      { numRuns: 200 },
    );
  });

  test("a rendering kept by key across requests measures what a fresh one does, the images' forms checked", () => {
    fc.assert(
      fc.property(hubRequestArbitrary, fc.array(fc.boolean(), { maxLength: 100 }), (request, webpOf) => {
        const memos = createFrozenMemos();
        const keys = new Map<number, object>(request.messages.map((_, i) => [i, {}]));
        // The same messages made afresh each request, as a translation makes them, under the same keys.
        const afresh = () => structuredClone(request.messages);
        const keyOf = (messages: HubMessage[]) => {
          const byMessage = new Map(messages.map((message, i) => [message, keys.get(i)]));
          return (message: HubMessage) => byMessage.get(message);
        };
        // The first request sends every image as it is; the second some as WebP (the same length of data).
        const forms = [asSent, (part: HubImagePart) => ({ ...asSent(part), mediaType: "image/webp" })];
        let image = 0;
        const second = new Map<HubImagePart, boolean>();
        for (const [round, formOf] of forms.entries()) {
          const messages = afresh();
          for (const message of messages)
            if (message.role === "user" || message.role === "tool")
              for (const part of message.content)
                if (part.type === "image")
                  second.set(part, webpOf[image++ % Math.max(1, webpOf.length)] ?? false);
          const choose = (part: HubImagePart) =>
            round === 1 && second.get(part) ? formOf(part) : asSent(part);
          const sent = messages.map(
            (message): HubMessage =>
              message.role === "user" || message.role === "tool"
                ? {
                    ...message,
                    content: message.content.map((part) =>
                      part.type === "image" ? { ...part, mediaType: choose(part).mediaType } : part,
                    ),
                  }
                : message,
          );
          const sizer = createChatBodySizer({ ...request, messages }, target, choose, memos);
          expect(sizer.measure(messages, keyOf(messages)).bytes).toBe(
            rendered({ ...request, messages: sent }),
          );
        }
      }),
      { numRuns: 200 },
    );
  });

  test("base64 of n bytes is 4·ceil(n/3) characters", () => {
    for (const n of [0, 1, 2, 3, 4, 5, 299, 300, 301])
      expect(base64Length(n)).toBe(Buffer.alloc(n).toString("base64").length);
  });
});
