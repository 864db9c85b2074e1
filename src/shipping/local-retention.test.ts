import { expect, test } from "bun:test";
import { fingerprintOf } from "./episode-objects.ts";
import { unchangedSinceShipping } from "./local-retention.ts";

const shipped = [
  { name: "episode.json", size: 10, mtimeMs: 1 },
  { name: "exchanges.jsonl", size: 100, mtimeMs: 2 },
  { name: "restart-001.jsonl", size: 5, mtimeMs: 3 },
];
const fingerprint = fingerprintOf(shipped);

test("records as shipped; a restart file that grew by a later stop marker still counts as shipped", () => {
  expect(unchangedSinceShipping(shipped, fingerprint)).toBe(true);
  const stopped = shipped.map((f) => (f.name.startsWith("restart") ? { ...f, size: 60, mtimeMs: 9 } : f));
  expect(unchangedSinceShipping(stopped, fingerprint)).toBe(true);
});

test("a grown records file, or a file never shipped (a newer restart file), keeps the directory", () => {
  const grown = shipped.map((f) => (f.name === "exchanges.jsonl" ? { ...f, size: 101 } : f));
  expect(unchangedSinceShipping(grown, fingerprint)).toBe(false);
  expect(
    unchangedSinceShipping([...shipped, { name: "restart-002.jsonl", size: 5, mtimeMs: 4 }], fingerprint),
  ).toBe(false);
  expect(
    unchangedSinceShipping([...shipped, { name: "frozen.json", size: 5, mtimeMs: 4 }], fingerprint),
  ).toBe(false);
});
