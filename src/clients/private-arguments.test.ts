import { describe, expect, test } from "bun:test";
import { canonicalArguments } from "../ledger/canonical-arguments.ts";
import { manifestToolSchema } from "../manifest/manifest-schema.ts";
import { privateArgumentKeys, withoutPrivateArguments } from "./private-arguments.ts";

describe("client-private arguments", () => {
  const sent = {
    nonce: "n1",
    _callID: "call_1",
    wait_for_previous: true,
    inner: { wait_for_previous: false },
  };

  test("the executor and the ledger see the same arguments", () => {
    const forwarded = withoutPrivateArguments(sent);
    expect(forwarded).toEqual({ nonce: "n1", inner: { wait_for_previous: false } });
    expect(canonicalArguments(sent)).toBe(canonicalArguments(forwarded));
  });

  test("a callback that differs from the model's call only in a private key matches it", () => {
    const modelCall = { nonce: "n1", wait_for_previous: true };
    const callback = { nonce: "n1", wait_for_previous: false, _callID: "c" };
    expect(canonicalArguments(callback)).toBe(canonicalArguments(modelCall));
  });

  test("a manifest tool may not declare a private key (a client would overwrite or drop it)", () => {
    for (const key of privateArgumentKeys) {
      const parsed = manifestToolSchema.safeParse({
        name: "move",
        description: "moves",
        route: "/move",
        input_schema: { type: "object", properties: { [key]: { type: "boolean" } } },
      });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues[0]?.path).toEqual(["input_schema", "properties", key]);
    }
  });
});
