import { expect, test } from "bun:test";
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { failedAttempt, pricedAttempt } from "../../test/support/exchange-line-fields.ts";
import { recordsCommand } from "./records-command.ts";

/** A data directory with one episode of one whole exchange, its exchanges.jsonl ending in a torn line (kill -9). */
function dataDirWithTornTail(): { dataDir: string; episode: string } {
  const dataDir = mkdtempSync(join(tmpdir(), "ura-records-command-"));
  const episode = "ep_torn";
  const dir = join(dataDir, "episodes", episode);
  mkdirSync(dir, { recursive: true });
  const at = "2026-12-01T10:00:00.000Z";
  const lines = [
    { v: 3, at, exchange: "ex_0001", stage: "client_request", protocol: "responses", path: "/v1/responses" },
    { v: 3, at, exchange: "ex_0001", stage: "status", status: "delivered", batch: null },
  ];
  writeFileSync(join(dir, "exchanges.jsonl"), lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
  appendFileSync(
    join(dir, "exchanges.jsonl"),
    '{"v":3,"at":"2026-12-01T10:00:01.000Z","exchange":"ex_0002","sta',
  );
  return { dataDir, episode };
}

async function run(args: string[]) {
  let stdout = "";
  const stderr: string[] = [];
  const code = await recordsCommand(
    args,
    {},
    {
      write: async (text) => {
        stdout += text;
      },
      error: (text) => stderr.push(text),
    },
  );
  return { code, stdout, stderr: stderr.join("\n") };
}

test("a torn last line is reported on stderr, naming the file, and the whole lines before it are still shown", async () => {
  const { dataDir, episode } = dataDirWithTornTail();
  const cases: [string[], string][] = [
    [["show", episode], "ex_0001 delivered"],
    [["export", episode, "--inline"], '"exchange":"ex_0001"'],
    [["list"], `${episode} exchanges=1`],
  ];
  for (const [args, shown] of cases) {
    const { code, stdout, stderr } = await run([...args, "--data-dir", dataDir]);
    expect(code).toBe(0);
    expect(stdout).toContain(shown);
    expect(stdout).not.toContain("ex_0002");
    expect(stderr).toContain(`${episode}/exchanges.jsonl ends in a torn line`);
  }
});

/** An episode directory holding an episode.json with `state` and the given restart files' lines. */
function writeEpisode(
  dataDir: string,
  id: string,
  state: string,
  restarts: Record<string, unknown>[][],
): void {
  const dir = join(dataDir, "episodes", id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "episode.json"), JSON.stringify({ id, state }));
  for (const [i, lines] of restarts.entries()) {
    const file = `restart-${String(i + 1).padStart(3, "0")}.jsonl`;
    writeFileSync(join(dir, file), lines.map((line) => `${JSON.stringify({ v: 3, ...line })}\n`).join(""));
  }
}

test("list gives the state the restart files record, not the one episode.json was last written with", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "ura-records-command-"));
  writeEpisode(dataDir, "ep_a", "running", []);
  // A restart report written before reports said the state: running → interrupted all the same.
  writeEpisode(dataDir, "ep_b", "running", [[{ type: "restarted", previous_state: "running" }]]);
  writeEpisode(dataDir, "ep_c", "finished", [
    [{ type: "restarted", previous_state: "finished", state: "finished" }],
  ]);
  // Restored twice, stopped cleanly in between; the newest restart file's first line torn (kill -9).
  writeEpisode(dataDir, "ep_d", "running", [
    [
      { type: "restarted", previous_state: "running", state: "interrupted" },
      { type: "stopped", state: "interrupted" },
    ],
  ]);
  appendFileSync(join(dataDir, "episodes", "ep_d", "restart-002.jsonl"), '{"v":3,"type":"resta');
  const { code, stdout } = await run(["list", "--data-dir", dataDir]);
  expect(code).toBe(0);
  expect(stdout).toBe(
    [
      "ep_a exchanges=0 state=running",
      "ep_b exchanges=0 state=interrupted",
      "ep_c exchanges=0 state=finished",
      "ep_d exchanges=0 state=interrupted",
      "",
    ].join("\n"),
  );
});

test("show gives each priced exchange's cost and list each episode's, never adding two currencies", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "ura-records-command-"));
  const priced = (currency: string, inputTokens: number) => pricedAttempt(currency, inputTokens, 100);
  const write = (id: string, costs: (ReturnType<typeof priced> | undefined)[]) => {
    const dir = join(dataDir, "episodes", id);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "episode.json"), JSON.stringify({ id, state: "finished" }));
    const lines = costs.map((cost, i) => ({
      v: 3,
      exchange: `ex_000${i + 1}`,
      stage: "upstream_response",
      attempts: [],
      raw: null,
      ...(cost ? { cost } : {}),
    }));
    writeFileSync(join(dir, "exchanges.jsonl"), lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
  };
  // 1,000 input tokens at 1 and 100 output tokens at 10 per million: 0.002.
  write("ep_cny", [priced("CNY", 1_000), undefined, priced("CNY", 3_000)]);
  write("ep_two", [priced("CNY", 1_000), priced("USD", 1_000)]);
  write("ep_none", [undefined]);

  const show = await run(["show", "ep_cny", "--data-dir", dataDir]);
  expect(show.code).toBe(0);
  const shown = show.stdout.trim().split("\n");
  expect(shown.map((line) => /cost=\S+ \S+/.exec(line)?.[0])).toEqual([
    "cost=0.002 CNY",
    undefined,
    "cost=0.004 CNY",
  ]);
  expect(shown[0]).toMatch(/^ex_0001 unfinished .* cost=0\.002 CNY$/);

  const list = await run(["list", "--data-dir", dataDir]);
  expect(list.code).toBe(0);
  expect(list.stdout.trim().split("\n")).toEqual([
    "ep_cny exchanges=3 state=finished cost=0.006 CNY",
    "ep_none exchanges=1 state=finished",
    "ep_two exchanges=2 state=finished cost=0.002 CNY + 0.002 USD",
  ]);
});

test("show says where and why an exchange was cancelled, from a line of today and from an older one", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "ura-records-command-"));
  const dir = join(dataDir, "episodes", "ep_cancelled");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "episode.json"), JSON.stringify({ id: "ep_cancelled", state: "running" }));
  const response = (exchange: string, members: Record<string, unknown>) => ({
    v: 3,
    exchange,
    stage: "upstream_response",
    attempts: [failedAttempt],
    raw: null,
    ...members,
  });
  const lines = [
    response("ex_0001", {
      error: "upstream request cancelled: the episode was cancelled",
      cancelled: { at: "queue", reason: "episode_cancelled" },
    }),
    response("ex_0002", { error: "upstream request cancelled: the client closed the request" }),
    response("ex_0003", { error: "HTTP 503" }),
  ];
  writeFileSync(join(dir, "exchanges.jsonl"), lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
  const show = await run(["show", "ep_cancelled", "--data-dir", dataDir]);
  expect(show.code).toBe(0);
  expect(
    show.stdout
      .trim()
      .split("\n")
      .map((line) => /cancelled=\S+/.exec(line)?.[0]),
  ).toEqual(["cancelled=queue/episode_cancelled", "cancelled=backoff/client_closed", undefined]);
});
