import { describe, expect, test } from "bun:test";
import { clientManifests, clientNames } from "./client-manifests.ts";
import { manifestToolFor, modelToolName } from "./tool-names.ts";

const tools = ["observe", "record", "finish"];

describe("model-visible tool names", () => {
  test("each pinned client's scheme gives the name its CLI shows the model", () => {
    const names = Object.fromEntries(
      clientNames.map((c) => [c, modelToolName(clientManifests[c].tool_name_scheme, "ura", "observe")]),
    );
    expect(names).toEqual({
      opencode: "ura_observe",
      gemini: "mcp_ura_observe",
      claude: "mcp__ura__observe",
      codex: "mcp__ura__observe",
    });
  });

  test("every scheme's name maps back to the manifest tool, for any server name", () => {
    for (const client of clientNames) {
      for (const server of ["ura", "arm_2"]) {
        const name = modelToolName(clientManifests[client].tool_name_scheme, server, "record");
        expect(manifestToolFor(name, server, tools)).toBe("record");
      }
    }
  });

  test("a client's own tools, other servers and unknown tools map to nothing", () => {
    expect(manifestToolFor("read_file", "ura", tools)).toBeUndefined();
    expect(manifestToolFor("mcp__other__observe", "ura", tools)).toBeUndefined();
    expect(manifestToolFor("mcp__ura__launch", "ura", tools)).toBeUndefined();
    expect(manifestToolFor("observe", "ura", tools)).toBeUndefined();
  });
});
