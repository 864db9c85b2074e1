import { expect, test } from "bun:test";
import { readCallbackIdentity } from "../ledger/callback-identity.ts";
import { callIdLocations } from "./call-identity.ts";
import { clientManifests, clientNames } from "./client-manifests.ts";

test("every pinned client's mcp_identity names a place a call id is read from (or none)", () => {
  for (const client of clientNames) {
    const identity = clientManifests[client].mcp_identity;
    if (identity === "none") continue;
    expect(callIdLocations.map((l) => l.identity)).toContain(identity);
  }
});

test("each place is read from the raw callback", () => {
  expect(readCallbackIdentity({ meta: { "claudecode/toolUseId": "toolu_1" } })).toEqual({
    kind: "call_id",
    value: "toolu_1",
  });
  expect(readCallbackIdentity({ meta: { callId: "call_2", itemId: "fc_2" } })).toEqual({
    kind: "call_id",
    value: "call_2",
  });
  expect(readCallbackIdentity({ args: { nonce: "n", _callID: "call_3" } })).toEqual({
    kind: "call_id",
    value: "call_3",
  });
  expect(readCallbackIdentity({ meta: { progressToken: "x" }, args: { nonce: "n" } })).toBeUndefined();
});
