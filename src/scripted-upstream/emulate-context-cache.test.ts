import { describe, expect, test } from "bun:test";
import { maxImageTokens } from "../models/image-tokens.ts";
import { listPromptBlocks } from "../upstream/prompt-blocks.ts";
import { createScriptedUpstream } from "./create-scripted-upstream.ts";
import { createContextCache, explicitLifetimeMs } from "./emulate-context-cache.ts";

const tools = [{ type: "function", function: { name: "observe", description: "observe", parameters: {} } }];
const marker = { cache_control: { type: "ephemeral" } };

/** A Chat Completions camera history of `turns` turns, each frame an image part; `marks` = message indexes whose last part is marked. */
function history(turns: number, marks: (count: number) => number[] = () => []) {
  const messages: { role: string; content: unknown; tool_calls?: unknown; tool_call_id?: string }[] = [
    { role: "system", content: [{ type: "text", text: "You watch a table. ".repeat(20) }] },
    { role: "user", content: "Observe on every turn." },
  ];
  for (let t = 0; t < turns; t++) {
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [{ id: `c${t}`, type: "function", function: { name: "observe", arguments: "{}" } }],
    });
    messages.push({ role: "tool", tool_call_id: `c${t}`, content: `frame ${t}` });
    messages.push({
      role: "user",
      content: [
        { type: "text", text: `Image returned by c${t}:` },
        { type: "image_url", image_url: { url: `data:image/webp;base64,FRAME${t}` } },
      ],
    });
  }
  for (const index of marks(messages.length)) {
    const message = messages[index];
    if (message && Array.isArray(message.content)) {
      const parts = message.content as object[];
      parts[parts.length - 1] = { ...parts[parts.length - 1], ...marker };
    }
  }
  return { tools, messages };
}
const total = (body: ReturnType<typeof history>) =>
  listPromptBlocks(body).reduce((sum, block) => sum + block.tokens, 0);
const last = (count: number) => [count - 1];

describe("implicit cache", () => {
  test("a request extending an answered one hits its whole prompt; the first request hits nothing", () => {
    const cache = createContextCache();
    const first = cache.account("k", listPromptBlocks(history(3)));
    expect(first).toMatchObject({ mode: "implicit", cachedTokens: 0, creationTokens: 0 });
    first.commit();
    const second = cache.account("k", listPromptBlocks(history(4)));
    expect(second.cachedTokens).toBe(total(history(3)));
  });

  test("nothing is served before the answer (commit), nor to another key or model", () => {
    const cache = createContextCache();
    cache.account("k", listPromptBlocks(history(3)));
    expect(cache.account("k", listPromptBlocks(history(4))).cachedTokens).toBe(0);
    cache.account("k", listPromptBlocks(history(3))).commit();
    expect(cache.account("other-key", listPromptBlocks(history(4))).cachedTokens).toBe(0);
  });

  test("a change early in the prompt serves only the prefix before it", () => {
    const cache = createContextCache();
    cache.account("k", listPromptBlocks(history(5))).commit();
    const changed = history(6);
    // The second turn's frame omitted (a context policy's notice in its place).
    changed.messages[7] = { role: "user", content: [{ type: "text", text: "[image omitted]" }] };
    const blocks = listPromptBlocks(changed);
    const upToChange = listPromptBlocks(history(1)).reduce((sum, b) => sum + b.tokens, 0);
    const account = cache.account("k", blocks);
    // Everything before message 7: the first turn plus the second turn's call and result.
    const secondCall = listPromptBlocks({ messages: history(2).messages.slice(5, 7) });
    expect(account.cachedTokens).toBe(upToChange + secondCall.reduce((sum, b) => sum + b.tokens, 0));
  });

  test("a prefix under 256 tokens is not served", () => {
    const cache = createContextCache();
    const small = { messages: [{ role: "user", content: "hi" }] };
    cache.account("k", listPromptBlocks(small)).commit();
    const longer = { messages: [...small.messages, { role: "user", content: "again" }] };
    expect(cache.account("k", listPromptBlocks(longer)).cachedTokens).toBe(0);
  });
});

describe("explicit cache", () => {
  test("a marker creates an entry after the answer (125% figure); the next turn's marker, 4 blocks on, hits it", () => {
    let now = 1_000;
    const cache = createContextCache({ now: () => now });
    const first = cache.account("k", listPromptBlocks(history(3, last)));
    expect(first.mode).toBe("explicit");
    expect(first.cachedTokens).toBe(0);
    expect(first.creationTokens).toBe(total(history(3)));
    first.commit();
    now += 60_000;
    const second = cache.account("k", listPromptBlocks(history(4, last)));
    expect(second.cachedTokens).toBe(total(history(3)));
    expect(second.creationTokens).toBe(total(history(4)) - total(history(3)));
  });

  test("explicit and implicit are exclusive: a marked request gets no implicit hit", () => {
    const cache = createContextCache();
    cache.account("k", listPromptBlocks(history(3))).commit();
    const marked = cache.account("k", listPromptBlocks(history(4, last)));
    expect(marked).toMatchObject({ mode: "explicit", cachedTokens: 0 });
  });

  test("an entry lives 5 minutes, renewed by each hit", () => {
    let now = 0;
    const cache = createContextCache({ now: () => now });
    cache.account("k", listPromptBlocks(history(3, last))).commit();
    now += explicitLifetimeMs - 1;
    // A hit at 4:59 renews it…
    expect(cache.account("k", listPromptBlocks(history(4, () => [10]))).cachedTokens).toBe(total(history(3)));
    now += explicitLifetimeMs - 1;
    expect(cache.account("k", listPromptBlocks(history(4, () => [10]))).cachedTokens).toBe(total(history(3)));
    // …and without one it is gone after 5 minutes.
    now += explicitLifetimeMs;
    expect(cache.account("k", listPromptBlocks(history(4, () => [10]))).cachedTokens).toBe(0);
  });

  test("a marker looks back 20 blocks, not 21", () => {
    // history(n) has 3 + 4n blocks (tools, system, user, then per turn: call, result, text, image).
    const withTextMarked = (turns: number) => {
      const body = history(turns);
      body.messages[body.messages.length - 1] = {
        role: "user",
        content: [{ type: "text", text: `Image returned by c${turns - 1}:`, ...marker }],
      };
      return body;
    };
    const entryAt9 = withTextMarked(2);
    expect(listPromptBlocks(entryAt9).length).toBe(10);
    const cached = listPromptBlocks(entryAt9).reduce((sum, b) => sum + b.tokens, 0);
    const twentyOneBack = history(7, last);
    expect(listPromptBlocks(twentyOneBack).length).toBe(31);
    const twentyBack = withTextMarked(7);
    expect(listPromptBlocks(twentyBack).length).toBe(30);
    for (const [body, expected] of [
      [twentyOneBack, 0],
      [twentyBack, cached],
    ] as const) {
      const cache = createContextCache();
      cache.account("k", listPromptBlocks(entryAt9)).commit();
      expect(cache.account("k", listPromptBlocks(body)).cachedTokens).toBe(expected);
    }
  });

  test("a marker under 1024 tokens creates nothing; more than 4 markers is refused", () => {
    const cache = createContextCache();
    const small = {
      messages: [{ role: "user", content: [{ type: "text", text: "short", ...marker }] }],
    };
    const account = cache.account("k", listPromptBlocks(small));
    expect(account.creationTokens).toBe(0);
    account.commit();
    expect(cache.account("k", listPromptBlocks(small)).cachedTokens).toBe(0);
    const five = history(5, () => [4, 7, 10, 13, 16]);
    expect(() => cache.account("k", listPromptBlocks(five))).toThrow("at most 4 cache_control markers");
  });

  test("images count by their patches", () => {
    const blocks = listPromptBlocks(history(1));
    expect(blocks.filter((block) => block.tokens === maxImageTokens)).toHaveLength(1);
  });
});

describe("the scripted upstream reports it", () => {
  const usageOf = async (response: Response) => {
    const frames = (await response.text()).split("\n\n").filter((f) => f.startsWith("data: {"));
    return JSON.parse((frames.at(-1) as string).slice(6)).usage;
  };
  const post = (upstream: ReturnType<typeof createScriptedUpstream>, body: object, key = "Bearer k") =>
    upstream.fetch(
      new Request("http://upstream/v1/chat/completions", {
        method: "POST",
        headers: { authorization: key, "content-type": "application/json" },
        body: JSON.stringify({ model: "qwen3-vl-plus", stream: true, ...body }),
      }),
    );

  test("in the final usage chunk: cached_tokens; with markers also the creation figure", async () => {
    const upstream = createScriptedUpstream({ readPixel: async () => [0, 0, 0] });
    const plain = ({ tools: _tools, ...body }: ReturnType<typeof history>) => body;
    expect((await usageOf(await post(upstream, plain(history(3))))).prompt_tokens_details).toEqual({
      cached_tokens: 0,
    });
    const second = await usageOf(await post(upstream, plain(history(4))));
    expect(second.prompt_tokens_details.cached_tokens).toBeGreaterThan(0);
    expect(second.prompt_tokens_details.cached_tokens).toBeLessThanOrEqual(second.prompt_tokens);
    // Another API key has its own cache.
    const other = await usageOf(await post(upstream, plain(history(4)), "Bearer other"));
    expect(other.prompt_tokens_details.cached_tokens).toBe(0);

    const marked = await usageOf(await post(upstream, plain(history(5, last))));
    expect(marked.prompt_tokens_details).toEqual({
      cached_tokens: 0,
      cache_creation_input_tokens: expect.any(Number),
      cache_creation: { ephemeral_5m_input_tokens: marked.prompt_tokens_details.cache_creation_input_tokens },
      cache_type: "ephemeral",
    });
    const next = await usageOf(await post(upstream, plain(history(6, last))));
    expect(next.prompt_tokens_details.cached_tokens).toBe(
      marked.prompt_tokens_details.cache_creation_input_tokens,
    );
  });

  test("more than 4 markers: HTTP 400", async () => {
    const upstream = createScriptedUpstream({ readPixel: async () => [0, 0, 0] });
    const response = await post(
      upstream,
      history(5, () => [4, 7, 10, 13, 16]),
    );
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("at most 4 cache_control markers");
  });
});
