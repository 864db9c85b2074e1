/**
 * records.max_bytes against the compiled binary: exchanges run until the data
 * directory reaches the bound, then a new one is refused with a final error in the
 * client's envelope naming the bound; the refusal is recorded (without the body)
 * and nothing already written is touched. `records list` and `records show` print
 * the refusal as docs/records.md shows it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rgbNoisePng } from "../../src/images/generate-png.ts";
import { directoryBytes } from "../../src/records/data-dir-budget.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { imageTurnRequest } from "../support/image-turn.ts";
import { runBinary, type SidecarProcess, startSidecarProcess } from "../support/sidecar-process.ts";

const maxBytes = 300_000;
let sidecar: SidecarProcess;
beforeAll(async () => {
  sidecar = await startSidecarProcess({ config: { records: { max_bytes: maxBytes } } });
});
afterAll(async () => {
  await sidecar.stopCleanly();
});

const turn = (frame: number) =>
  JSON.stringify(imageTurnRequest(`frame ${frame}`, [rgbNoisePng(160, 120, frame).png.toBase64()]));

test("over records.max_bytes a new exchange is refused, loudly and on record", async () => {
  const launch = await sidecar.createEpisode({ max_turns: 0 });
  const post = (body: string) =>
    fetch(`${launch.urls.responses}/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${launch.ingress_key}` },
      body,
    });
  const statuses: number[] = [];
  let refusal: { error: { message: string; type: string } } | undefined;
  for (let frame = 1; frame <= 8 && refusal === undefined; frame++) {
    const res = await post(turn(frame));
    statuses.push(res.status);
    if (res.status !== 200) refusal = (await res.json()) as typeof refusal;
    else await res.text();
  }
  // Some exchanges ran, then the bound was reached (each turn stores a ~58 KB PNG and its WebP).
  expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
  expect(statuses.at(-1)).toBe(400);
  expect(refusal?.error.message).toContain(`records.max_bytes = ${maxBytes}`);
  expect(directoryBytes(sidecar.dataDir)).toBeGreaterThanOrEqual(maxBytes);

  const records = openRecords(sidecar.dataDir);
  const refused = records.readEpisode(launch.id).exchanges.at(-1);
  expect(refused?.stage("client_request")?.value.body_omitted).toBe("records.max_bytes");
  expect(refused?.stage("status")?.value).toMatchObject({
    status: "failed",
    error: { kind: "episode_closed" },
  });
  // The exchanges before it are complete and rebuild byte for byte.
  const first = records.readEpisode(launch.id).exchanges[0];
  expect(first && records.clientRequestText(first)).toBe(turn(1));

  // `records list` and `records show` print what docs/records.md shows.
  const dataDir = ["--data-dir", sidecar.dataDir];
  const list = await runBinary(["records", "list", ...dataDir]);
  expect(list.stdout).toBe(`${launch.id} exchanges=${statuses.length} state=running\n`);
  const show = await runBinary(["records", "show", launch.id, ...dataDir]);
  expect(show.code).toBe(0);
  const summaries = show.stdout.trimEnd().split("\n");
  expect(summaries).toHaveLength(statuses.length);
  expect(summaries[0]).toMatch(
    /^ex_0001 delivered protocol=responses images=1 record_bytes=\d+ upstream_line_bytes=[1-9]\d*$/,
  );
  expect(summaries.at(-1)).toMatch(
    new RegExp(
      `^ex_${String(statuses.length).padStart(4, "0")} failed protocol=responses images=0 record_bytes=\\d+ upstream_line_bytes=0$`,
    ),
  );
  const refusedBody = await runBinary([
    "records",
    "show",
    launch.id,
    "--exchange",
    String(statuses.length),
    ...dataDir,
  ]);
  expect(refusedBody.code).toBe(2);
  expect(refusedBody.stderr).toContain("has no recorded client body");
});
