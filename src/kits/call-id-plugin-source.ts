/** The OpenCode call-id plugin's source (manifests/opencode/ura-call-id.ts), embedded in the binary so kits can write it. */
// @ts-expect-error -- a text import of a .ts file yields its source, which TypeScript cannot type
import source from "../../manifests/opencode/ura-call-id.ts" with { type: "text" };

export const callIdPluginSource: string = String(source);
