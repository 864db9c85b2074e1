/**
 * Terminal provider failure in the compiled binary: once the retry budget is
 * spent the episode goes to `provider_error`; the failing request itself and
 * every later model request from the CLI get a final 400 (an outer CLI retry
 * could not succeed and cannot create more upstream work), also after a
 * restart. Needs `make build`.
 */
import { expect, test } from "bun:test";
import {
  fileUpstream,
  injectFaults,
  movedTo,
  responsesRequest,
  startSidecar,
  upstreamRequests,
} from "../support/lifecycle-kit.ts";

const upstream = await fileUpstream(30_000);

test("retry budget spent → provider_error and a final 400 at once; later requests get it too, before and after a restart", async () => {
  const config = { upstream: { retry: { max_attempts: 2, initial_backoff_ms: 10, max_backoff_ms: 20 } } };
  const sidecar = await startSidecar(upstream, config);
  const episode = await sidecar.createEpisode({ client: "codex" });
  await injectFaults(upstream, [
    { kind: "status", status: 500 },
    { kind: "status", status: 503 },
  ]);
  const failed = await responsesRequest(episode, [{ role: "user", content: "go" }]);
  expect(failed.status).toBe(400);
  expect(JSON.stringify(await failed.json())).toMatch(/HTTP 5.?03.*provider_error/);
  expect((await upstreamRequests(upstream)).length).toBe(2);
  const status = await sidecar.episode(episode.id);
  expect(status.state).toBe("failed");
  expect(status.failure).toMatchObject({ reason: "provider_error" });

  for (let retry = 0; retry < 3; retry++) {
    const again = await responsesRequest(episode, [{ role: "user", content: "go" }]);
    expect(again.status).toBe(400);
    expect(JSON.stringify(await again.json())).toContain("provider_error");
  }
  expect((await upstreamRequests(upstream)).length).toBe(2);
  await sidecar.stopCleanly();

  const restarted = await startSidecar(upstream, config, sidecar.dataDir);
  const after = await restarted.episode(episode.id);
  expect(after.state).toBe("failed");
  expect(after.failure).toMatchObject({ reason: "provider_error" });
  expect(
    (await responsesRequest(movedTo(episode, restarted), [{ role: "user", content: "go" }])).status,
  ).toBe(400);
  expect((await upstreamRequests(upstream)).length).toBe(2);
  await restarted.stopCleanly();
});
