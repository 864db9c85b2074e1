/**
 * Top-level tool-call argument keys that a client adds on its own side; they are
 * never the model's or the robot's:
 *   - `_callID`: our OpenCode plugin's call identity (manifests/opencode/ura-call-id.ts);
 *   - `wait_for_previous`: Gemini CLI adds it to every tool declaration as a
 *     scheduling hint, overwriting any property of that name the tool declared,
 *     and forwards it in the MCP call when the model set it.
 * Because a declared property of either name would be replaced or swallowed by a
 * client, a manifest may not declare one (manifest-schema.ts); so these keys are
 * dropped unconditionally, both when matching a callback to the model's call and
 * before the arguments reach the executor (docs/clients.md, "Private arguments").
 */
export const callIdArgument = "_callID";
export const geminiSchedulingHint = "wait_for_previous";

export const privateArgumentKeys: readonly string[] = [callIdArgument, geminiSchedulingHint];

export function isPrivateArgumentKey(key: string): boolean {
  return privateArgumentKeys.includes(key);
}

/** `args` without the client-private top-level keys; nested values are the tool's and stay. */
export function withoutPrivateArguments(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([key]) => !isPrivateArgumentKey(key)));
}
