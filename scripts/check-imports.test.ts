import { describe, expect, test } from "bun:test";
import { faultOf, importsOf, placeOf } from "./check-imports.ts";

describe("check-imports", () => {
  test("reads static imports over several lines, re-exports, bare and dynamic imports, type-only ones too", () => {
    const source = [
      'import type { A } from "../a.ts";',
      "import {\n  b,\n  c,\n} from './b.ts';",
      'export { d } from "./d.ts";',
      'import "./side-effect.ts";',
      'const e = await import("./e.ts");',
    ].join("\n");
    expect(importsOf(source).sort()).toEqual(["../a.ts", "./b.ts", "./d.ts", "./e.ts", "./side-effect.ts"]);
  });

  test("an import down the layers or within a folder passes", () => {
    expect(faultOf("src/ingress/gemini/route.ts", "../../episodes/episode.ts")).toBeUndefined();
    expect(faultOf("src/ingress/gemini/route.ts", "../parse-at.ts")).toBeUndefined();
    expect(faultOf("src/main.ts", "../package.json")).toBeUndefined();
    expect(faultOf("src/lib/errors.ts", "zod")).toBeUndefined();
  });

  test("an import up the layers, or beside, fails and names both ends", () => {
    expect(faultOf("src/records/read-records.ts", "../episodes/episode.ts")).toBe(
      "src/records/read-records.ts imports src/episodes/episode.ts: src/episodes/ is above src/records/ (scripts/layers.ts)",
    );
    expect(faultOf("src/mcp/mcp-routes.ts", "../exchange/exchange-run.ts")).toContain(
      "src/exchange/ is beside src/mcp/",
    );
  });

  test("production code importing test support fails", () => {
    expect(faultOf("src/mcp/mcp-routes.ts", "../../test/support/mcp-kit.ts")).toContain(
      "production code never imports test support",
    );
    expect(faultOf("src/mcp/mcp-routes.ts", "bun:test")).toContain("never imports test support");
  });

  test("a folder with no place in the layers fails", () => {
    expect(placeOf("src/new-folder/thing.ts")).toBeUndefined();
    expect(faultOf("src/new-folder/thing.ts", "../lib/errors.ts")).toContain("is in no layer");
  });
});
