import { beforeAll, describe, expect, test } from "bun:test";
import { type HubPart, type HubRequest, hubRequestSchema } from "../hub/schema.ts";
import { SidecarError } from "../lib/errors.ts";
import { textOf } from "../lib/known-frame.ts";
import { sha256OfBase64 } from "../lib/sha256.ts";
import { type Codecs, loadCodecs } from "./codecs.ts";
import { createImageConverter } from "./convert-request.ts";
import {
  greyPng,
  palettePng,
  rgb16Png,
  rgbaTransparentPng,
  rgbNoisePng,
  solidColourPng,
} from "./generate-png.ts";
import { createImageCache } from "./image-cache.ts";
import { convertOnThisThread } from "./png-to-webp.ts";
import { webpSettingsSchema } from "./settings.ts";

let codecs: Codecs;
beforeAll(async () => {
  codecs = await loadCodecs();
});
const settings = webpSettingsSchema.parse({});

/** Real codecs, counting encodes. */
function countingCodecs(): Codecs & { encodes: number } {
  const counted = {
    encodes: 0,
    decodePng: (bytes: Uint8Array) => codecs.decodePng(bytes),
    decodeWebp: (bytes: Uint8Array) => codecs.decodeWebp(bytes),
    encodeWebpLossless: (image: Parameters<Codecs["encodeWebpLossless"]>[0], s: typeof settings) => {
      counted.encodes++;
      return codecs.encodeWebpLossless(image, s);
    },
  };
  return counted;
}

function converter(c: Codecs = codecs, cacheBytes = 64 * 1024 * 1024) {
  return createImageConverter({
    converter: convertOnThisThread(c),
    settings,
    cache: createImageCache(cacheBytes),
  });
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const png = (bytes: Uint8Array): HubPart => ({ type: "image", mediaType: "image/png", data: b64(bytes) });

function request(messages: HubRequest["messages"]): HubRequest {
  return { model: "m", messages, tools: [], ignored: [] };
}

function pixelsOf(
  part: HubPart | undefined,
  decode: (b: Uint8Array) => { width: number; height: number; data: ArrayLike<number> },
) {
  if (part?.type !== "image") throw new Error("not an image part");
  const image = decode(Uint8Array.fromBase64(textOf(part.data)));
  return { width: image.width, height: image.height, data: Buffer.from(image.data as Uint8Array) };
}

describe("convertRequest", () => {
  test("user and tool-result PNGs become WebP with identical pixels; text and the input stay untouched", async () => {
    const camera = rgbNoisePng(48, 32);
    const alpha = rgbaTransparentPng(20, 10);
    const grey = greyPng(9, 7, 4);
    const input = request([
      { role: "system", content: [{ type: "text", text: "sys" }] },
      { role: "user", content: [{ type: "text", text: "look" }, png(camera.png)] },
      { role: "assistant", text: null, toolCalls: [{ id: "c1", name: "observe", arguments: "{}" }] },
      { role: "tool", toolCallId: "c1", name: "observe", content: [png(alpha.png), png(grey.png)] },
    ]);
    const before = structuredClone(input);

    const { request: out, stats } = await converter().convertRequest(input);

    expect(input).toEqual(before);
    expect(out.messages[0]).toBe(input.messages[0] as never);
    const user = out.messages[1];
    const tool = out.messages[3];
    if (user?.role !== "user" || tool?.role !== "tool") throw new Error("shape changed");
    expect(user.content[0]).toEqual({ type: "text", text: "look" });
    expect(tool.toolCallId).toBe("c1");
    const pairs: [HubPart | undefined, Uint8Array][] = [
      [user.content[1], camera.png],
      [tool.content[0], alpha.png],
      [tool.content[1], grey.png],
    ];
    for (const [part, original] of pairs) {
      expect(part?.type === "image" && part.mediaType).toBe("image/webp");
      expect(pixelsOf(part, codecs.decodeWebp)).toEqual(pixelsOf(png(original), codecs.decodePng));
    }
    expect(stats).toMatchObject({ images: 3, converted: 3, cacheHits: 0 });
    expect(stats.passedThrough).toEqual({ not_png: 0, png_16bit: 0, animated_png: 0 });
    expect(stats.bytesBefore).toBe(camera.png.length + alpha.png.length + grey.png.length);
    expect(stats.bytesAfter).toBeGreaterThan(0);
  });

  test("16-bit PNGs pass through unchanged and are counted", async () => {
    const sixteen = png(rgb16Png(8, 8).png);
    const { request: out, stats } = await converter().convertRequest(
      request([{ role: "user", content: [sixteen] }]),
    );
    expect(out.messages[0]).toEqual({ role: "user", content: [sixteen] });
    expect(stats.passedThrough.png_16bit).toBe(1);
    expect(stats.converted).toBe(0);
  });

  test("JPEG, WebP and other media types pass through unchanged", async () => {
    const parts: HubPart[] = [
      { type: "image", mediaType: "image/jpeg", data: "/9j/4AAQSkZJRg==" },
      { type: "image", mediaType: "image/webp", data: "UklGRg==" },
      { type: "image", mediaType: "image/gif", data: "R0lGODlh" },
    ];
    const { request: out, stats } = await converter().convertRequest(
      request([{ role: "user", content: parts }]),
    );
    expect(out.messages[0]).toEqual({ role: "user", content: parts });
    expect(stats.passedThrough.not_png).toBe(3);
  });

  test("an APNG passes through (a decoder would keep only its first frame)", async () => {
    const still = rgbNoisePng(4, 4).png;
    // Insert an acTL chunk after IHDR (8 + 25 bytes).
    const acTL = new Uint8Array([0, 0, 0, 8, 0x61, 0x63, 0x54, 0x4c, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
    const animated = new Uint8Array([...still.subarray(0, 33), ...acTL, ...still.subarray(33)]);
    const { stats } = await converter().convertRequest(request([{ role: "user", content: [png(animated)] }]));
    expect(stats.passedThrough.animated_png).toBe(1);
  });

  describe("bad PNG data is a SidecarError naming the hub location", () => {
    const good = rgbNoisePng(16, 16).png;
    const corrupt = new Uint8Array(good);
    corrupt[50] = (corrupt[50] ?? 0) ^ 0xff;
    const cases: [string, string, RegExp][] = [
      ["corrupt IDAT", b64(corrupt), /the decoder rejected its data/],
      ["truncated", b64(good.subarray(0, good.length - 20)), /truncated/],
      ["JPEG bytes labelled PNG", "/9j/4AAQSkZJRgABAQ==", /no PNG signature/],
      ["invalid base64", "iVBORw0KGgo$$$", /invalid base64/],
    ];
    for (const [name, data, detail] of cases) {
      test(name, async () => {
        const input = request([
          { role: "user", content: [{ type: "text", text: "hi" }] },
          { role: "assistant", text: "ok", toolCalls: [] },
          { role: "user", content: [png(good)] },
          {
            role: "user",
            content: [
              { type: "text", text: "now" },
              { type: "image", mediaType: "image/png", data },
            ],
          },
        ]);
        const error = await converter()
          .convertRequest(input)
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        expect(error).toBeInstanceOf(SidecarError);
        const sidecar = error as SidecarError;
        expect(sidecar.kind).toBe("invalid_request");
        expect(sidecar.param).toBe("messages[3].content[1]");
        expect(sidecar.message).toStartWith("messages[3].content[1]: image/png data is not a valid PNG (");
        expect(sidecar.message).toMatch(detail);
      });
    }
  });

  test("the cache turns a re-sent history into one encode per new image", async () => {
    const c = countingCodecs();
    const convert = converter(c);
    const frames = [1, 2, 3].map((seed) => png(rgbNoisePng(32, 24, seed).png));
    const history: HubRequest["messages"] = [];
    const encodesPerTurn: number[] = [];
    const hitsPerTurn: number[] = [];
    let lastOut: HubRequest | undefined;
    for (const frame of frames) {
      history.push({ role: "user", content: [frame] });
      const before = c.encodes;
      const { request: out, stats } = await convert.convertRequest(request([...history]));
      encodesPerTurn.push(c.encodes - before);
      hitsPerTurn.push(stats.cacheHits);
      lastOut = out;
    }
    expect(encodesPerTurn).toEqual([1, 1, 1]);
    expect(hitsPerTurn).toEqual([0, 1, 2]);
    // Cached output is the same WebP the first encode produced.
    const first = await converter().convertRequest(
      request([{ role: "user", content: [frames[0] as HubPart] }]),
    );
    expect(lastOut?.messages[0]).toEqual(first.request.messages[0] as never);
  });

  test("the same image twice in one request is encoded once", async () => {
    const c = countingCodecs();
    const frame = png(palettePng(12, 12).png);
    const { stats } = await converter(c).convertRequest(request([{ role: "user", content: [frame, frame] }]));
    expect(c.encodes).toBe(1);
    expect(stats).toMatchObject({ converted: 1, cacheHits: 1 });
  });

  test("a cache too small for the history means re-encoding (eviction is real)", async () => {
    const c = countingCodecs();
    // Room for one of the two frames only.
    const convert = converter(c, 64 + 700);
    const frames = [1, 2].map((seed) => png(rgbNoisePng(16, 16, seed).png));
    const turn = request([{ role: "user", content: frames }]);
    await convert.convertRequest(turn);
    await convert.convertRequest(turn);
    expect(c.encodes).toBe(4);
  });
});

describe("forget", () => {
  test("frames left out before the request was prepared are let go, unless the request sends the same frame", async () => {
    const cache = createImageCache(64 * 1024 * 1024);
    const convert = createImageConverter({
      converter: convertOnThisThread(codecs),
      settings,
      cache,
      owner: "e1",
    });
    const [a, b, c] = [1, 2, 3].map((seed) => png(rgbNoisePng(16, 16, seed).png)) as HubPart[];
    const digest = (part: HubPart) => sha256OfBase64(part.type === "image" ? part.data : "");
    await convert.convertRequest(request([{ role: "user", content: [a as HubPart, b as HubPart] }]));
    expect(cache.entries).toBe(2);
    // The policy left a and b out of this request; b is sent again as a new frame.
    const { request: out, stats } = await convert.convertRequest(
      request([{ role: "user", content: [{ ...(b as HubPart) }, c as HubPart] }]),
      { forget: [a, b] as never },
    );
    expect(cache.peek(digest(a as HubPart))).toBeUndefined();
    expect(cache.peek(digest(b as HubPart))).toBeDefined();
    expect(stats).toMatchObject({ converted: 1, cacheHits: 1 });
    expect(out.messages[0]?.role).toBe("user");
    // What is not PNG was never cached and lets go of nothing; nor does text that is not base64.
    const notPng = { type: "image" as const, mediaType: "image/jpeg", data: (c as { data: string }).data };
    const notBase64 = { type: "image" as const, mediaType: "image/png", data: "not base64!" };
    await convert.convertRequest(request([]), { forget: [notPng, notBase64] });
    expect(cache.peek(digest(c as HubPart))).toBeDefined();
    // A request with no image at all still lets go of what it is told to.
    await convert.convertRequest(request([]), { forget: [c] as never });
    expect(cache.peek(digest(c as HubPart))).toBeUndefined();
  });
});

describe("pixel limit", () => {
  test("a PNG whose header claims more pixels than the limit is refused before decoding", async () => {
    const codecs = await loadCodecs();
    const converter = createImageConverter({
      converter: convertOnThisThread(codecs),
      settings: webpSettingsSchema.parse({}),
      cache: createImageCache(1024 * 1024),
      maxPixels: 100,
    });
    const png = Buffer.from(solidColourPng(11, 10, [1, 2, 3])).toString("base64");
    const request = hubRequestSchema.parse({
      model: "m",
      messages: [{ role: "user", content: [{ type: "image", mediaType: "image/png", data: png }] }],
      tools: [],
    });
    await expect(converter.convertRequest(request)).rejects.toThrow("11×10 pixels is over the limit of 100");
  });
});

describe("a refused request costs no conversion", () => {
  const newFrames = () => [rgbNoisePng(40, 30, 11).png, rgbNoisePng(40, 30, 12).png];
  const refusals: [string, HubPart, string][] = [
    ["over the pixel limit", png(solidColourPng(50, 50, [1, 2, 3])), "over the limit of 1200 pixels"],
    ["not base64", { type: "image", mediaType: "image/png", data: "%%%%" }, "invalid base64"],
    [
      "not a PNG",
      { type: "image", mediaType: "image/png", data: b64(new Uint8Array(64)) },
      "not a valid PNG",
    ],
  ];
  for (const [name, bad, message] of refusals) {
    test(`an image ${name} after new frames: refused before any of them is converted or cached`, async () => {
      const counted = countingCodecs();
      const cache = createImageCache(1024 * 1024);
      const converter = createImageConverter({
        converter: convertOnThisThread(counted),
        settings,
        cache,
        maxPixels: 1200,
      });
      const input = request([{ role: "user", content: [...newFrames().map(png), bad] }]);
      await expect(converter.convertRequest(input)).rejects.toThrow(message);
      expect(counted.encodes).toBe(0);
      expect(cache.entries).toBe(0);
    });
  }
});
