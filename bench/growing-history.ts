/**
 * Growing-history bench: real recorded requests of the four clients (Claude Code's
 * 77 KB Messages request, Gemini CLI's first turn, OpenCode's and Codex's agent turns,
 * compact JSON as sent) replayed as growing 50-turn conversations: turn t is the
 * recorded request with t−1 more assistant/user exchanges appended to its history, so
 * each turn resends the whole history plus one new pair, as the clients do. Printed per
 * client: the sidecar's CPU per turn (every thread of the process, schedstat) at turn 5
 * and turn 50 (each the mean of the three turns around it, then the median over the
 * measured episodes: the machine is shared, and one turn's few milliseconds are noisy), their ratio (goal ≤ 1.3: the work per
 * turn is proportional to what is new), and the turn-50 figure against the CPU the
 * pass-through floor spends forwarding the same turn-50 body (goal ≤ 2×), same run.
 * Two more rows grow the Gemini CLI and Codex requests with a tool call a turn instead
 * (the model's text and one function call, then the call's text result), as an agent's
 * history mostly grows.
 *   bun bench/growing-history.ts [episodes]
 * URA_BENCH_GROWING_ROWS (names, comma-separated, e.g. gemini_calls,codex_calls) runs only those rows.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { cpuMs, post, startCpuBenchRig } from "./exchange-cpu.ts";

const root = resolve(import.meta.dir, "..");
const turns = 50;
const warmUpEpisodes = 3;
const floorRepeats = 300;

type Json = Record<string, unknown>;
type Urls = { responses: string; gemini: string; anthropic: string };

type Client = {
  name: string;
  fixture: string;
  url: (urls: Urls) => string;
  auth: (key: string) => Record<string, string>;
  /**
   * The recorded request with the history grown by one exchange (the model's answer, then
   * the user's next message, or a call's result); `turn` numbers the call.
   */
  grow: (body: Json, answer: string, next: string, turn: number) => void;
};

const list = (body: Json, key: string) => body[key] as unknown[];

export const clients: Client[] = [
  {
    name: "claude_messages",
    fixture: "messages/main-turn",
    url: (u) => `${u.anthropic}/v1/messages?beta=true`,
    auth: (key) => ({ "x-api-key": key, "anthropic-version": "2023-06-01" }),
    grow: (body, answer, next) =>
      list(body, "messages").push(
        { role: "assistant", content: [{ type: "text", text: answer }] },
        { role: "user", content: [{ type: "text", text: next }] },
      ),
  },
  {
    name: "gemini",
    fixture: "gemini/first-turn",
    url: (u) => `${u.gemini}/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse`,
    auth: (key) => ({ "x-goog-api-key": key }),
    grow: (body, answer, next) =>
      list(body, "contents").push(
        { role: "model", parts: [{ text: answer }] },
        { role: "user", parts: [{ text: next }] },
      ),
  },
  {
    name: "opencode_responses",
    fixture: "responses/opencode-agent-turn",
    url: (u) => `${u.responses}/responses`,
    auth: (key) => ({ authorization: `Bearer ${key}` }),
    grow: (body, answer, next) =>
      list(body, "input").push(
        { role: "assistant", content: [{ type: "output_text", text: answer }] },
        { role: "user", content: [{ type: "input_text", text: next }] },
      ),
  },
  {
    name: "codex_responses",
    fixture: "responses/codex-namespace-turn",
    url: (u) => `${u.responses}/responses`,
    auth: (key) => ({ authorization: `Bearer ${key}` }),
    grow: (body, answer, next) =>
      list(body, "input").push(
        { type: "message", role: "assistant", content: [{ type: "output_text", text: answer }] },
        { type: "message", role: "user", content: [{ type: "input_text", text: next }] },
      ),
  },
  {
    name: "gemini_calls",
    fixture: "gemini/first-turn",
    url: (u) => `${u.gemini}/v1beta/models/qwen3-vl-plus:streamGenerateContent?alt=sse`,
    auth: (key) => ({ "x-goog-api-key": key }),
    grow: (body, answer, next, turn) =>
      list(body, "contents").push(
        {
          role: "model",
          parts: [
            { text: next },
            {
              functionCall: {
                id: `call_${turn}_0`,
                name: "read_file",
                args: { file_path: `src/${turn}.ts` },
              },
              // As Gemini CLI signs a turn's first call.
              thoughtSignature: "skip_thought_signature_validator",
            },
          ],
        },
        {
          role: "user",
          parts: [
            { functionResponse: { id: `call_${turn}_0`, name: "read_file", response: { output: answer } } },
          ],
        },
      ),
  },
  {
    name: "codex_calls",
    fixture: "responses/codex-namespace-turn",
    url: (u) => `${u.responses}/responses`,
    auth: (key) => ({ authorization: `Bearer ${key}` }),
    grow: (body, answer, next, turn) =>
      list(body, "input").push(
        { type: "message", role: "assistant", content: [{ type: "output_text", text: next }] },
        {
          type: "function_call",
          call_id: `call_${turn}_0`,
          name: "exec_command",
          arguments: JSON.stringify({ cmd: `cat src/${turn}.ts` }),
        },
        { type: "function_call_output", call_id: `call_${turn}_0`, output: answer },
      ),
  },
];

/** Deterministic prose of about `length` characters, different for every seed. */
function prose(seed: number, length: number): string {
  const words = [
    "the",
    "robot",
    "camera",
    "front",
    "arm",
    "moves",
    "left",
    "table",
    "cup",
    "sees",
    "red",
    "blue",
  ];
  let text = `(${seed}) `;
  let state = seed * 2654435761;
  while (text.length < length) {
    state = (state * 1103515245 + 12345) >>> 0;
    text += `${words[state % words.length]} `;
  }
  return text.trim();
}

/** The 50 bodies of one conversation, compact JSON as the client sends it. */
export function conversation(client: Client, episode: number): string[] {
  const body = JSON.parse(
    readFileSync(join(root, "fixtures", client.fixture, "client-request.json"), "utf8"),
  ) as Json;
  const bodies = [JSON.stringify(body)];
  for (let t = 2; t <= turns; t++) {
    client.grow(body, prose(episode * 1000 + t, 1200), prose(episode * 1000 + t + 500, 200), t);
    bodies.push(JSON.stringify(body));
  }
  return bodies;
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

export async function runGrowingHistoryBench(
  log: (line: string) => void = console.log,
  episodes = 15,
): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  const rig = await startCpuBenchRig("ura-bench-growing-");
  const { floor, sidecar } = rig;
  try {
    log(
      `Sidecar CPU ms per turn (all threads) of a growing ${turns}-turn conversation, each the mean of the three turns around it, median over ${episodes} episodes after ${warmUpEpisodes} warm-up episodes; the floor forwarding the same body, mean of ${floorRepeats}.`,
    );
    log(
      "| client | bytes turn 5 / 50 | turn 5 | turn 50 | 50 ÷ 5 (goal ≤ 1.3) | floor at 50 | 50 ÷ floor (goal ≤ 2) |",
    );
    log("|---|---|---|---|---|---|---|");
    const only = process.env.URA_BENCH_GROWING_ROWS?.split(",").filter((name) => name !== "");
    for (const client of clients.filter((row) => only === undefined || only.includes(row.name))) {
      const perEpisode: number[][] = [];
      let last: string[] = [];
      for (let e = 0; e < warmUpEpisodes + episodes; e++) {
        const bodies = conversation(client, e);
        last = bodies;
        const episode = await sidecar.createEpisode({ max_turns: 0, model: "qwen3-vl-plus" });
        const url = client.url(episode.urls);
        const headers = client.auth(episode.ingress_key);
        const cpu: number[] = [];
        for (let t = 0; t < turns; t++) {
          const before = cpuMs(sidecar.proc.pid);
          await post(url, headers, bodies[t] as string);
          cpu.push(cpuMs(sidecar.proc.pid) - before);
        }
        if (e >= warmUpEpisodes) perEpisode.push(cpu);
      }
      const around = (turn: number) =>
        median(
          perEpisode.map(
            (cpu) =>
              ((cpu[turn - 2] ?? 0) + (cpu[turn - 1] ?? 0) + (cpu[Math.min(turn, turns - 1)] ?? 0)) / 3,
          ),
        );
      const at50 = last[turns - 1] as string;
      for (let i = 0; i < 50; i++) await post(`${floor.url}/chat/completions`, {}, at50);
      const floorBefore = cpuMs(floor.proc.pid);
      for (let i = 0; i < floorRepeats; i++) await post(`${floor.url}/chat/completions`, {}, at50);
      const floorMs = (cpuMs(floor.proc.pid) - floorBefore) / floorRepeats;
      const turn5 = around(5);
      const turn50 = around(turns - 1);
      figures[`growing_${client.name}_turn5_cpu_ms`] = turn5;
      figures[`growing_${client.name}_turn50_cpu_ms`] = turn50;
      figures[`growing_${client.name}_turn50_over_turn5`] = turn50 / turn5;
      figures[`growing_${client.name}_floor_turn50_cpu_ms`] = floorMs;
      figures[`growing_${client.name}_turn50_over_floor`] = turn50 / floorMs;
      log(
        `| ${client.name} | ${Buffer.byteLength(last[4] as string)} / ${Buffer.byteLength(at50)} | ${turn5.toFixed(3)} | ${turn50.toFixed(3)} | ${(turn50 / turn5).toFixed(2)} | ${floorMs.toFixed(3)} | ${(turn50 / floorMs).toFixed(2)} |`,
      );
    }
  } finally {
    await rig.stop();
  }
  return figures;
}

if (import.meta.main) await runGrowingHistoryBench(console.log, Number(process.argv[2] ?? 15));
