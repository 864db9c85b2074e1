/**
 * The layers of src/, from the top down: a file may import only from its own folder
 * (or file) and from the layers below its own; folders that share a layer never
 * import each other. What two layers share lives in the lower one. Checked by
 * check-imports.ts in `make check`; a new folder under src/ gets its place here.
 */
export const layers: readonly (readonly string[])[] = [
  ["src/main.ts"],
  ["src/cli/", "src/compatibility/"],
  ["src/validate/"],
  // The HTTP server: the app's routes and middleware, the composition root, starting and stopping.
  ["src/server/"],
  ["src/ui/", "src/dataset/", "src/kits/"],
  // The route groups: one per client protocol, the control API.
  ["src/control/", "src/ingress/"],
  // The exchange pipeline, the MCP server, restoring and draining episodes.
  ["src/exchange/", "src/mcp/", "src/lifecycle/"],
  ["src/episodes/"],
  ["src/observe/", "src/shipping/", "src/scripted-upstream/"],
  ["src/records/"],
  ["src/upstream/"],
  ["src/config/"],
  ["src/executor/", "src/manifest/"],
  ["src/ledger/"],
  // The price table and the cost arithmetic (exact decimals) sit here with the other pure cores over the hub.
  ["src/clients/", "src/context/", "src/images/", "src/pricing/"],
  // Request bodies: received under their limits, split around their large strings, parsed, admitted.
  ["src/body/"],
  // The pure cores.
  ["src/hub/", "src/sse/", "src/models/", "src/health/"],
  // Generic helpers, and what a long string of a request is known by (a frame's stand-in is
  // the hub's image data, src/lib/known-frame.ts).
  ["src/lib/"],
];

/** Test support and test data: production code in src/ never imports them (nor bun:test). */
export const testOnly: readonly string[] = ["test/", "fixtures/", "bench/", "bun:test"];
