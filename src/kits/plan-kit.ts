/** The kit planner of each pinned client. */
import type { ClientName } from "../clients/client-manifests.ts";
import type { KitInput, KitPlan } from "./kit-plan.ts";
import { planClaudeKit } from "./plan-claude-kit.ts";
import { planCodexKit } from "./plan-codex-kit.ts";
import { planGeminiKit } from "./plan-gemini-kit.ts";
import { planOpencodeKit } from "./plan-opencode-kit.ts";

const planners: Record<ClientName, (input: KitInput) => KitPlan> = {
  opencode: planOpencodeKit,
  gemini: planGeminiKit,
  claude: planClaudeKit,
  codex: planCodexKit,
};

export function planKit(client: ClientName, input: KitInput): KitPlan {
  return planners[client](input);
}
