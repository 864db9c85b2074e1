import { expect, test } from "bun:test";
import { createIdleCollector } from "./collect-when-idle.ts";

test("collects once after the requests stop, never while one is being handled, never twice in a row", async () => {
  let collections = 0;
  const collector = createIdleCollector(30, () => {
    collections += 1;
  });
  const { promise: slow, resolve: finishSlow } = Promise.withResolvers<string>();
  const handling = collector.track(() => slow);
  await collector.track(() => "quick");
  await Bun.sleep(250);
  expect(collections).toBe(0); // the slow request is still being handled
  finishSlow("slow");
  expect(await handling).toBe("slow");
  await Bun.sleep(250);
  expect(collections).toBe(1);
  await Bun.sleep(250);
  expect(collections).toBe(1);
  await collector.track(async () => "next");
  await Bun.sleep(250);
  expect(collections).toBe(2);
  collector.stop();
});

test("a request that throws still counts as finished", async () => {
  let collections = 0;
  const collector = createIdleCollector(20, () => {
    collections += 1;
  });
  await expect(
    collector.track(() => {
      throw new Error("handler failed");
    }),
  ).rejects.toThrow("handler failed");
  await Bun.sleep(250);
  expect(collections).toBe(1);
});
