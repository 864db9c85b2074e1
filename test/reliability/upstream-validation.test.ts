/**
 * Upstream answers that must never become deliverable tool calls, against the
 * compiled binary: call ids with control characters (they would reach the
 * executor's header) and numbers JSON cannot carry (`1e999`). Each is the
 * upstream's fault: `upstream_invalid`, the episode in provider_error, nothing
 * registered in the ledger. Needs `make build` (dist/ura-sidecar).
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import {
  cannedUpstreamForFile,
  exchangesOf,
  hardenedSidecarFor,
  ledgerOf,
  responsesTurn,
} from "../support/hardening-kit.ts";

setDefaultTimeout(30_000);

const upstream = cannedUpstreamForFile();
const sidecar = hardenedSidecarFor(upstream);

async function expectUpstreamFault(call: { id: string; name: string; arguments: string }, says: RegExp) {
  const episode = await sidecar.createEpisode();
  upstream.calls(call);
  const res = await responsesTurn(episode);
  const text = (await res.text()).replaceAll("\u200b", "");
  expect(res.status).not.toBe(200);
  expect(text).toMatch(says);
  expect(text).not.toContain('"function_call"');
  const status = exchangesOf(episode).find((l) => l.stage === "status");
  expect(status).toMatchObject({ status: "failed", error: { kind: "upstream_invalid" } });
  expect(ledgerOf(episode).filter((e) => e.type === "registered")).toEqual([]);
  const after = await sidecar.episode(episode.id);
  expect(after.state).toBe("failed");
  expect(after.failure).toMatchObject({ reason: "provider_error" });
}

for (const [name, id] of [
  ["CR LF", "call_1\r\nX-Injected: 1"],
  ["NUL", "call_1\u0000"],
] as const) {
  test(`a call id with ${name} is an upstream fault, never delivered or registered`, async () => {
    await expectUpstreamFault({ id, name: "ura_record", arguments: '{"nonce":"n"}' }, /control character/);
  });
}

test("a number JSON cannot carry (1e999) in tool arguments is an upstream fault, not the client's", async () => {
  await expectUpstreamFault(
    { id: "call_big", name: "ura_record", arguments: '{"nonce":1e999}' },
    /too large for JSON.*arguments\.nonce/,
  );
});
