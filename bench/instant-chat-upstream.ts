/**
 * The bench's upstream: an instant Chat Completions server answering like Qwen,
 * so every gateway in the latency bench (direct, floor, Portkey, the sidecar)
 * talks to the same thing and differences are the gateways' own.
 *   stream:true  → SSE: role chunk, content (or one tool call) in deltas, finish chunk, usage chunk, [DONE]
 *   stream:false → one chat.completion JSON document
 * A request that declares tools gets a call to the first one; otherwise ~1 KB of text.
 * With --text every request gets the text (a recorded client request declares dozens
 * of tools whose first one needs arguments).
 *   bun bench/instant-chat-upstream.ts [--text]   prints "listening: http://127.0.0.1:N/v1"
 */
const encoder = new TextEncoder();
const text = "The gripper moves two centimetres to the left and re-checks the block. ".repeat(14);

type ChatBody = { stream?: boolean; tools?: { function?: { name?: string } }[] };

let seq = 0;
const alwaysText = process.argv.includes("--text");

function answer(body: ChatBody): Response {
  seq += 1;
  const id = `chatcmpl-bench-${seq}`;
  const created = Math.floor(Date.now() / 1000);
  const toolName = alwaysText ? undefined : body.tools?.[0]?.function?.name;
  const usage = { prompt_tokens: 120, completion_tokens: 40, total_tokens: 160 };
  const toolCall = toolName
    ? { index: 0, id: `call_bench_${seq}`, type: "function", function: { name: toolName, arguments: "{}" } }
    : undefined;
  if (!body.stream) {
    return Response.json({
      id,
      object: "chat.completion",
      created,
      model: "qwen-bench",
      choices: [
        {
          index: 0,
          message: toolCall
            ? { role: "assistant", content: "", tool_calls: [toolCall] }
            : { role: "assistant", content: text },
          finish_reason: toolCall ? "tool_calls" : "stop",
        },
      ],
      usage,
    });
  }
  const chunk = (delta: unknown, finish: string | null, extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: "qwen-bench", choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  const frames = [chunk({ role: "assistant", content: "" }, null)];
  if (toolCall) frames.push(chunk({ tool_calls: [toolCall] }, null));
  else
    for (let i = 0; i < text.length; i += 100) frames.push(chunk({ content: text.slice(i, i + 100) }, null));
  frames.push(chunk({}, toolCall ? "tool_calls" : "stop"));
  frames.push(
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: "qwen-bench", choices: [], usage })}\n\n`,
  );
  frames.push("data: [DONE]\n\n");
  return new Response(encoder.encode(frames.join("")), {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}

const bench = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    if (req.method !== "POST" || !new URL(req.url).pathname.endsWith("/chat/completions"))
      return Response.json(
        { error: { message: "not found", type: "invalid_request_error" } },
        { status: 404 },
      );
    return answer((await req.json()) as ChatBody);
  },
});
console.log(`listening: http://127.0.0.1:${bench.port}/v1`);
