import { expect, test } from "bun:test";
import { createMemoryReclaimer } from "./reclaim-memory.ts";

function recorded() {
  const collections: boolean[] = [];
  const reclaimer = createMemoryReclaimer({
    thresholdBytes: 1000,
    delayMs: 5,
    collect: (full) => collections.push(full),
  });
  return { collections, reclaimer };
}

test("a large request asks for one collection after it ends; small ones do not", async () => {
  const { collections, reclaimer } = recorded();
  reclaimer.requestStarted();
  reclaimer.requestEnded(999);
  await Bun.sleep(20);
  expect(collections).toEqual([]);
  reclaimer.requestStarted();
  reclaimer.requestStarted();
  reclaimer.requestEnded(1000);
  reclaimer.requestEnded(5000);
  expect(collections).toEqual([]);
  await Bun.sleep(20);
  expect(collections).toEqual([true]);
});

test("the collection is full only when no other request is in flight", async () => {
  const { collections, reclaimer } = recorded();
  reclaimer.requestStarted();
  reclaimer.requestStarted();
  reclaimer.requestEnded(5000);
  await Bun.sleep(20);
  reclaimer.requestEnded(5000);
  await Bun.sleep(20);
  expect(collections).toEqual([false, true]);
});

test("memory let go outside a request (an ended episode's frames) is collected too", async () => {
  const { collections, reclaimer } = recorded();
  reclaimer.released();
  reclaimer.released();
  await Bun.sleep(20);
  expect(collections).toEqual([true]);
});
