import { describe, expect, test } from "bun:test";
import { linkSignals } from "./link-signals.ts";

describe("linkSignals", () => {
  test("aborts when any source aborts, with its reason", () => {
    const a = new AbortController();
    const b = new AbortController();
    const linked = linkSignals([a.signal, b.signal]);
    expect(linked.signal.aborted).toBe(false);
    b.abort(new Error("b went"));
    expect(linked.signal.aborted).toBe(true);
    expect((linked.signal.reason as Error).message).toBe("b went");
    linked.dispose();
  });

  test("an already aborted source aborts at once", () => {
    const a = new AbortController();
    a.abort(new Error("early"));
    expect(linkSignals([a.signal]).signal.aborted).toBe(true);
  });

  test("times out, and says so", async () => {
    const linked = linkSignals([], 20);
    await Bun.sleep(60);
    expect(linked.signal.aborted).toBe(true);
    expect(linked.timedOut()).toBe(true);
  });

  test("dispose stops the timer and detaches from the sources", async () => {
    const a = new AbortController();
    const linked = linkSignals([a.signal], 20);
    linked.dispose();
    await Bun.sleep(60);
    a.abort();
    expect(linked.signal.aborted).toBe(false);
    expect(linked.timedOut()).toBe(false);
  });
});
