/** One Anthropic Messages exchange with an episode of a running sidecar (the demo model answers). */
import type { LaunchInfo } from "./sidecar-process.ts";

export async function sendSmokeMessage(episode: LaunchInfo, text = "Hello"): Promise<Response> {
  return fetch(`${episode.urls.anthropic}/v1/messages`, {
    method: "POST",
    headers: {
      "x-api-key": episode.ingress_key,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    },
    body: JSON.stringify({
      model: "qwen3-vl-plus",
      max_tokens: 200,
      messages: [{ role: "user", content: text }],
    }),
  });
}
