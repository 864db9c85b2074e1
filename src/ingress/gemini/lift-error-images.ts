/**
 * Gemini CLI reports a failed MCP tool result as one string in
 * `functionResponse.response.error`: "MCP tool '<tool>' reported tool error for
 * function call: <call JSON> with response: <JSON of the result parts>". The MCP
 * result inside keeps its image blocks (`{type:"image", data:<base64>,
 * mimeType}`), so forwarded as it is, a camera frame becomes up to a megabyte of
 * base64 text in the prompt and the model never sees the picture. This lifts each
 * image back out as an image part and leaves a short placeholder in the text where
 * it was; if the string cannot be read, every long base64 run is replaced by an
 * explicit omission notice instead. Pure.
 */
import type { HubPart } from "../../hub/schema.ts";

export type LiftedError = {
  /** The error text with each image replaced by a placeholder naming it. */
  text: string;
  images: HubPart[];
  /** What was done, for the exchange's record (undefined: nothing in it looked like an image). */
  note?: string;
};

const marker = " with response: ";
const longBase64 = /[A-Za-z0-9+/]{256,}={0,2}/g;

type ImageBlock = { type: "image"; data: string; mimeType: string };
function isImageBlock(value: unknown): value is ImageBlock {
  const v = value as ImageBlock;
  return (
    typeof value === "object" &&
    value !== null &&
    v.type === "image" &&
    typeof v.data === "string" &&
    typeof v.mimeType === "string"
  );
}

/** A copy of `value` with each image block's data replaced by a placeholder; the images in order. */
function takeImages(value: unknown, images: ImageBlock[]): unknown {
  if (Array.isArray(value)) return value.map((v) => takeImages(v, images));
  if (isImageBlock(value)) {
    images.push(value);
    return { ...value, data: `<image ${images.length}, sent to the model as an image>` };
  }
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, takeImages(v, images)]));
  return value;
}

/** The parsed result after the first " with response: " that is followed by exactly one JSON value. */
function parseResponse(error: string): { head: string; parsed: unknown } | undefined {
  for (let at = error.indexOf(marker); at >= 0; at = error.indexOf(marker, at + 1)) {
    try {
      return {
        head: error.slice(0, at + marker.length),
        parsed: JSON.parse(error.slice(at + marker.length)),
      };
    } catch {
      // The call's own arguments may contain the marker: try the next one.
    }
  }
  return undefined;
}

/** `source`: the client's field path of the error string, named by errors about its images. */
export function liftErrorImages(error: string, source?: string): LiftedError {
  const found = parseResponse(error);
  if (found) {
    const blocks: ImageBlock[] = [];
    const rest = takeImages(found.parsed, blocks);
    if (blocks.length > 0) {
      return {
        text: `${found.head}${JSON.stringify(rest)}`,
        images: blocks.map((b, i) => ({
          type: "image",
          mediaType: b.mimeType,
          data: b.data,
          ...(source ? { source: `${source} (image ${i + 1} in the text)` } : {}),
        })),
        note: `${blocks.length} image(s) lifted out of Gemini CLI's failed-tool error text into image parts`,
      };
    }
  }
  let omitted = 0;
  const text = error.replace(longBase64, (run) => {
    omitted += 1;
    return `[image data omitted: ${run.length} base64 characters inside a failed tool result that could not be read as an MCP result]`;
  });
  if (omitted === 0) return { text: error, images: [] };
  return {
    text,
    images: [],
    note: `${omitted} base64 run(s) in Gemini CLI's failed-tool error text could not be read as images and were replaced by an omission notice`,
  };
}
