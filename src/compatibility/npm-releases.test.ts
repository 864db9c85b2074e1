import { expect, test } from "bun:test";
import { lastReleases } from "./npm-releases.ts";

test("the last N releases by version, pre-releases and the registry's own keys left out, dates as days", () => {
  const times = {
    created: "2025-01-01T00:00:00.000Z",
    modified: "2026-11-24T22:06:38.000Z",
    "0.1.1": "2026-09-25T10:00:00.000Z",
    "0.60.0": "2026-09-16T10:00:00.000Z",
    "0.61.0": "2026-09-25T09:00:00.000Z",
    "0.62.0-nightly.20260926": "2026-09-26T00:00:00.000Z",
    "0.59.0": "2026-09-09T10:00:00.000Z",
    "0.9.0": "2026-01-01T10:00:00.000Z",
  };
  expect(lastReleases(times, 3)).toEqual([
    { version: "0.59.0", date: "2026-09-09" },
    { version: "0.60.0", date: "2026-09-16" },
    { version: "0.61.0", date: "2026-09-25" },
  ]);
  expect(lastReleases(times, 10).map((r) => r.version)).toEqual([
    "0.1.1",
    "0.9.0",
    "0.59.0",
    "0.60.0",
    "0.61.0",
  ]);
});

test("versions asked for by name join the last releases, in version order; an unpublished one is refused", () => {
  const times = {
    "2.1.197": "2026-10-01T00:00:00.000Z",
    "2.1.330": "2026-11-20T19:16:01+00:00",
    "2.1.331": "2026-11-23T18:36:26+00:00",
    "2.1.332": "2026-11-24T22:06:38+00:00",
  };
  expect(lastReleases(times, 2, ["2.1.197", "2.1.332"]).map((r) => r.version)).toEqual([
    "2.1.197",
    "2.1.331",
    "2.1.332",
  ]);
  expect(() => lastReleases(times, 2, ["2.1.198"])).toThrow("not published on npm: 2.1.198");
});
