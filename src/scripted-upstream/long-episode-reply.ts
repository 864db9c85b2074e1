/**
 * A long camera episode for the scripted model: observe once per turn until it
 * has seen `observations` frames, then finish with the colour of the last frame,
 * then a final text — `observations + 2` model turns, each frame a tool-result
 * image the client sends back in every later request. Requests without the
 * robot tools (title requests) get a title, as in the smoke episode.
 */
import { nearestPaletteColour } from "../executor/inert-palette.ts";
import type { DecideReply } from "./create-scripted-upstream.ts";
import { lastImageUrl, toolNamed } from "./decide-reply.ts";

export function longEpisodeReply(observations: number): DecideReply {
  return async (request, readPixel) => {
    const observe = toolNamed(request, "observe");
    const finish = toolNamed(request, "finish");
    if (!observe || !finish) return { kind: "text", text: "Long camera episode" };
    const called = (name: string) =>
      request.messages.flatMap((m) => m.tool_calls ?? []).filter((c) => c.function.name === name).length;
    if (called(observe) < observations)
      return { kind: "tool_calls", calls: [{ name: observe, arguments: "{}" }] };
    if (called(finish) === 0) {
      const url = lastImageUrl(request.messages);
      const colour = url ? nearestPaletteColour(await readPixel(url)) : "no-image-seen";
      return { kind: "tool_calls", calls: [{ name: finish, arguments: JSON.stringify({ answer: colour }) }] };
    }
    return { kind: "text", text: `The episode is complete after ${observations} observations.` };
  };
}
