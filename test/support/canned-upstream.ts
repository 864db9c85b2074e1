/**
 * A Chat Completions upstream that answers exactly what a test queues (tests
 * only): tool calls with chosen ids and raw argument text, plain text, an HTTP
 * error with a chosen body, or a raw SSE body. The reliability tests need
 * answers the scripted Qwen never gives (repeated or malformed call ids,
 * non-finite numbers, a key echoed back, huge bodies). Every request is kept
 * with its headers. An empty queue answers a short text.
 */
export type CannedCall = { id?: string; name: string; arguments: string };
export type CannedReply =
  | { kind: "calls"; calls: CannedCall[] }
  | { kind: "text"; text: string }
  | { kind: "status"; status: number; body: string }
  | { kind: "raw"; body: string }
  /** Waits `ms` before answering `then`. */
  | { kind: "slow"; ms: number; reply: CannedReply };

export type CannedRequest = { headers: Record<string, string>; body: Record<string, unknown> };

const frame = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
const chunk = (delta: unknown, finish: string | null = null) => ({
  id: "chatcmpl-canned",
  object: "chat.completion.chunk",
  created: 0,
  model: "qwen3-vl-plus",
  choices: [{ index: 0, delta, finish_reason: finish }],
});

/** The SSE body Qwen would stream for a reply. */
export function cannedSse(reply: { kind: "calls"; calls: CannedCall[] } | { kind: "text"; text: string }) {
  const frames = [frame(chunk({ role: "assistant", content: "" }))];
  if (reply.kind === "text") {
    frames.push(frame(chunk({ content: reply.text })), frame(chunk({}, "stop")));
  } else {
    for (const [index, call] of reply.calls.entries()) {
      const delta = {
        index,
        ...(call.id === undefined ? {} : { id: call.id }),
        type: "function",
        function: { name: call.name, arguments: call.arguments },
      };
      frames.push(frame(chunk({ tool_calls: [delta] })));
    }
    frames.push(frame(chunk({}, "tool_calls")));
  }
  frames.push("data: [DONE]\n\n");
  return frames.join("");
}

/** A Chat Completions stand-in answering queued replies, on a loopback port. */
export interface CannedUpstream {
  url: string;
  received: CannedRequest[];
  /** Queues replies for the next requests, in order. */
  reply(...replies: CannedReply[]): void;
  calls(...calls: CannedCall[]): void;
  reset(): void;
  stop(): void;
}

export function serveCannedUpstream(): CannedUpstream {
  const queue: CannedReply[] = [];
  const received: CannedRequest[] = [];
  const answer = async (reply: CannedReply | undefined): Promise<Response> => {
    const r = reply ?? { kind: "text", text: "nothing more to do" };
    switch (r.kind) {
      case "slow":
        await Bun.sleep(r.ms);
        return answer(r.reply);
      case "status":
        return new Response(r.body, { status: r.status, headers: { "content-type": "application/json" } });
      case "raw":
        return new Response(r.body, { headers: { "content-type": "text/event-stream" } });
      default:
        return new Response(cannedSse(r), { headers: { "content-type": "text/event-stream" } });
    }
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const body = (await req.json().catch(() => ({}))) as Record<string, unknown>;
      received.push({ headers: Object.fromEntries(req.headers), body });
      return answer(queue.shift());
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    received,
    reply: (...replies: CannedReply[]) => queue.push(...replies),
    calls: (...calls: CannedCall[]) => queue.push({ kind: "calls", calls }),
    reset: () => {
      queue.length = 0;
      received.length = 0;
    },
    stop: () => server.stop(true),
  };
}
