import { describe, expect, test } from "bun:test";
import { modelDeviations } from "./model-deviations.ts";
import type { UpstreamExchange } from "./upstream-evidence.ts";

const batch = (calls: [string, string, object][]) => ({
  type: "registered",
  calls: calls.map(([id, tool, args]) => ({ id, tool, args })),
});
const receipt = (callId: string, data: object) => ({ type: "receipt", callId, result: { ok: true, data } });
const finalText: UpstreamExchange = { exchange: "x4", body: {}, response: { text: "done", toolCalls: [] } };

describe("model deviations from the smoke script", () => {
  test("a model that followed the script has none", () => {
    const ledger = [
      batch([["c1", "observe", {}]]),
      receipt("c1", { nonce: "n1", colour: "red" }),
      batch([
        ["c2", "record", { nonce: "n1" }],
        ["c3", "record", { nonce: "n1" }],
      ]),
      batch([["c4", "finish", { answer: "red" }]]),
      receipt("c4", { submitted: true, correct: true }),
    ];
    expect(modelDeviations(ledger, [finalText])).toEqual([]);
  });

  test("one record, a wrong nonce, a wrong colour and no final text are each said plainly", () => {
    const ledger = [
      batch([["c1", "observe", {}]]),
      receipt("c1", { nonce: "n1" }),
      batch([["c2", "record", { nonce: "n9" }]]),
      batch([["c4", "finish", { answer: "green" }]]),
      receipt("c4", { submitted: true, correct: false }),
    ];
    expect(modelDeviations(ledger, [{ ...finalText, response: { text: null, toolCalls: [{}] } }])).toEqual([
      'model turn 2 called ["record"]; the script asks for two identical record calls with the observed nonce, in one batch',
      'record c2 sent nonce "n9"; the observation\'s nonce was "n1"',
      'finish c4 answered "green", which the receipt says is not the colour of the observed frame',
      "the model did not end with a text answer after finish",
    ]);
  });

  test("a model that stopped early, and a refused answer, are reported", () => {
    const ledger = [batch([["c1", "observe", {}]])];
    expect(
      modelDeviations(ledger, [{ exchange: "x2", body: {}, response: { error: "invalid JSON arguments" } }]),
    ).toEqual([
      "the model delivered 1 tool-call turn(s); the script has 3 (next expected: two identical record calls with the observed nonce, in one batch)",
      "the upstream answer of exchange x2 was refused: invalid JSON arguments",
    ]);
  });
});
