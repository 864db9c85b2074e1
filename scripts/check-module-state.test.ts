import { expect, test } from "bun:test";
import { moduleStateOf } from "./check-module-state.ts";

test("top-level let/var, weak collections and empty maps and sets are state; lookup tables and locals are not", () => {
  const source = [
    "let sequence = 0;",
    "export var legacy;",
    "const handedOver = new WeakMap<Request, string>();",
    "const seen = new WeakSet();",
    "const cache: Map<string, number> = new Map();",
    "const sizes = new Map<string, number>();",
    'const builtIn = new Set(["web_search", "file_search"]);',
    "function f() {\n  let local = 1;\n  const map = new Map();\n  return local + map.size;\n}",
  ].join("\n");
  expect(moduleStateOf(source).sort()).toEqual([
    "cache",
    "handedOver",
    "legacy",
    "seen",
    "sequence",
    "sizes",
  ]);
});
