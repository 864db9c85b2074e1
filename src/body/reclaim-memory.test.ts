import { expect, test } from "bun:test";
import { createMemoryReclaimer } from "./reclaim-memory.ts";

/** Collections asked for (true = full), with the idle trigger far off unless a test sets it. */
function recorded(idleMs = 60_000) {
  const collections: boolean[] = [];
  const reclaimer = createMemoryReclaimer({
    thresholdBytes: 1000,
    delayMs: 5,
    idleMs,
    collect: (full) => collections.push(full),
  });
  return { collections, reclaimer };
}

/** A request being handled until the returned function is called. */
function handling(reclaimer: ReturnType<typeof createMemoryReclaimer>) {
  const { promise, resolve } = Promise.withResolvers<string>();
  const answered = reclaimer.track(() => promise);
  return async () => {
    resolve("answer");
    expect(await answered).toBe("answer");
  };
}

test("a large request asks for one collection after it ends; small ones do not", async () => {
  const { collections, reclaimer } = recorded();
  reclaimer.requestEnded(999);
  await Bun.sleep(20);
  expect(collections).toEqual([]);
  reclaimer.requestEnded(1000);
  reclaimer.requestEnded(5000);
  expect(collections).toEqual([]);
  await Bun.sleep(20);
  expect(collections).toEqual([true]);
  reclaimer.stop();
});

test("the collection after a large request is full only when no other request is in flight", async () => {
  const { collections, reclaimer } = recorded();
  const finishOther = handling(reclaimer);
  reclaimer.requestEnded(5000);
  await Bun.sleep(20);
  await finishOther();
  reclaimer.requestEnded(5000);
  await Bun.sleep(20);
  expect(collections).toEqual([false, true]);
  reclaimer.stop();
});

test("a large body arriving before the collection after the last one ran, alone: that collection runs in full first", async () => {
  const { collections, reclaimer } = recorded();
  reclaimer.requestEnded(5000);
  const finishNext = handling(reclaimer);
  reclaimer.bodyArriving(999);
  expect(collections).toEqual([]);
  reclaimer.bodyArriving(5000);
  expect(collections).toEqual([true]);
  await Bun.sleep(20);
  // Once: the timer's collection is the one that ran, and nothing is owed any more.
  reclaimer.bodyArriving(5000);
  expect(collections).toEqual([true]);
  await finishNext();
  reclaimer.stop();
});

test("a large body arriving while another request is in flight, or with nothing owed, collects nothing", async () => {
  const { collections, reclaimer } = recorded();
  reclaimer.requestEnded(5000);
  const finishOther = handling(reclaimer);
  const finishNext = handling(reclaimer);
  reclaimer.bodyArriving(5000);
  expect(collections).toEqual([]);
  await Bun.sleep(20);
  expect(collections).toEqual([false]); // concurrent: others in flight
  await finishOther();
  reclaimer.bodyArriving(5000); // still owed, now alone
  expect(collections).toEqual([false, true]);
  reclaimer.bodyArriving(5000);
  expect(collections).toEqual([false, true]);
  await finishNext();
  reclaimer.stop();
});

test("memory let go outside a request (an ended episode's frames) is collected too", async () => {
  const { collections, reclaimer } = recorded();
  reclaimer.released();
  reclaimer.released();
  await Bun.sleep(20);
  expect(collections).toEqual([true]);
  reclaimer.stop();
});

test("idle: one full collection after the requests stop, never while one is being handled, never twice in a row", async () => {
  const { collections, reclaimer } = recorded(30);
  const finishSlow = handling(reclaimer);
  await reclaimer.track(() => "quick");
  await Bun.sleep(250);
  expect(collections).toEqual([]); // the slow request is still being handled
  await finishSlow();
  await Bun.sleep(250);
  expect(collections).toEqual([true]);
  await Bun.sleep(250);
  expect(collections).toEqual([true]);
  await reclaimer.track(async () => "next");
  await Bun.sleep(250);
  expect(collections).toEqual([true, true]);
  reclaimer.stop();
});

test("idle: a request that throws still counts as finished", async () => {
  const { collections, reclaimer } = recorded(20);
  await expect(
    reclaimer.track(() => {
      throw new Error("handler failed");
    }),
  ).rejects.toThrow("handler failed");
  await Bun.sleep(250);
  expect(collections).toEqual([true]);
  reclaimer.stop();
});

test("after stop nothing is collected", async () => {
  const { collections, reclaimer } = recorded(20);
  await reclaimer.track(() => "last");
  reclaimer.requestEnded(5000);
  reclaimer.stop();
  reclaimer.released();
  await Bun.sleep(100);
  expect(collections).toEqual([]);
});

test("a long body asks for a concurrent collection every duringBodyBytes received; a full one restarts the count", () => {
  const collections: boolean[] = [];
  const reclaimer = createMemoryReclaimer({
    thresholdBytes: 1000,
    duringBodyBytes: 100,
    idleMs: 60_000,
    collect: (full) => collections.push(full),
  });
  reclaimer.bodyReceived(60);
  expect(collections).toEqual([]);
  reclaimer.bodyReceived(40);
  expect(collections).toEqual([false]);
  reclaimer.bodyReceived(99);
  expect(collections).toEqual([false]);
  reclaimer.bodyReceived(1);
  expect(collections).toEqual([false, false]);
  reclaimer.requestEnded(5000);
  reclaimer.bodyArriving(5000);
  expect(collections).toEqual([false, false, true]);
  reclaimer.bodyReceived(99);
  expect(collections).toEqual([false, false, true]);
  reclaimer.stop();
  reclaimer.bodyReceived(1000);
  expect(collections).toEqual([false, false, true]);
});
