/**
 * The MCP form of a failed tool result, chosen per client. A failed result often
 * carries the camera frame that explains the failure, and some pinned clients
 * (their manifest says `failed_result_images: "dropped"`: Claude Code, OpenCode)
 * send only the text of an `isError` result to the model and drop its images. For
 * those, a failed result that has images is answered as a non-error result whose
 * first text states the failure unmistakably, so the image reaches the model;
 * every other failed result stays `isError`. Pure.
 */

import { type ClientName, clientManifests } from "../clients/client-manifests.ts";
import type { ToolContent } from "../executor/executor.ts";

export type ToolCallResult = { content: ToolContent[]; isError?: boolean };

export const failureHeading =
  "TOOL CALL FAILED: the robot reported a failure; nothing below is a success. (Returned as a plain result only so that its image reaches you.)";

export function failedResult(client: ClientName | undefined, content: ToolContent[]): ToolCallResult {
  const hasImage = content.some((part) => part.type === "image");
  if (hasImage && client !== undefined && clientManifests[client].failed_result_images === "dropped")
    return { content: [{ type: "text", text: failureHeading }, ...content] };
  return { isError: true, content };
}
