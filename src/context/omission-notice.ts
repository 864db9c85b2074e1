/**
 * The text part that stands in for a tool-result image the sliding window
 * omitted, so the model knows an image was there rather than seeing it vanish.
 */
import type { HubTextPart } from "../hub/schema.ts";

/** `imageNumber` counts the image parts of that tool result from 1. */
export function createOmissionNotice(toolCallId: string, imageNumber: number): HubTextPart {
  return {
    type: "text",
    text: `[image omitted by the context policy: tool result ${toolCallId}, image ${imageNumber}]`,
  };
}
