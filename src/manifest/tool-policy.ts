/**
 * The policy of a manifest's tools as the ledger consults it (src/ledger/tool-policy.ts):
 * `approval` — `never` (absent), `always`, or `{when: <JSON Schema>}`, which asks for
 * approval exactly when the call's arguments are valid against that schema — and
 * `rate`. A condition is compiled by the same JSON Schema validator as the tools'
 * input schemas (src/mcp/tool-validators.ts): data evaluated by the validator, never
 * code the manifest brings. See docs/approvals.md.
 */
import type { JsonSchemaType } from "@modelcontextprotocol/sdk/validation";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { ToolPolicy } from "../ledger/tool-policy.ts";
import { errorMessage } from "../lib/error-message.ts";
import type { Manifest, ToolApproval } from "./manifest-schema.ts";

/** How the journal and the operator see a tool's rule (a long condition is cut). */
export function describeApproval(approval: ToolApproval): string {
  if (typeof approval === "string") return approval;
  const condition = JSON.stringify(approval.when);
  return `when the arguments match ${condition.length > 300 ? `${condition.slice(0, 300)}…` : condition}`;
}

/** Whether any tool of the manifest may ask for approval (the client's tool-call timeout then includes the wait). */
export function asksForApproval(manifest: Manifest): boolean {
  return manifest.tools.some((tool) => tool.approval !== undefined && tool.approval !== "never");
}

export function compileToolPolicy(manifest: Manifest): ToolPolicy {
  const provider = new AjvJsonSchemaValidator();
  const rules = new Map<string, (args: unknown) => boolean>();
  for (const tool of manifest.tools) {
    const approval = tool.approval ?? "never";
    if (approval === "never") continue;
    if (approval === "always") {
      rules.set(tool.name, () => true);
      continue;
    }
    const validate = provider.getValidator(approval.when as JsonSchemaType);
    rules.set(tool.name, (args) => validate(args).valid);
  }
  const rates = new Map(manifest.tools.flatMap((tool) => (tool.rate ? [[tool.name, tool.rate]] : [])));
  const byName = new Map(manifest.tools.map((tool) => [tool.name, tool]));
  return {
    approvalRule(tool, args) {
      const approval = byName.get(tool)?.approval;
      return approval !== undefined && rules.get(tool)?.(args) ? describeApproval(approval) : undefined;
    },
    rate: (tool) => rates.get(tool),
  };
}

/** A tool's approval condition that will not compile: the 400 naming `manifest.tools[i].approval`. */
export function approvalProblem(manifest: Manifest): { param: string; message: string } | undefined {
  for (const [i, tool] of manifest.tools.entries()) {
    const approval = tool.approval;
    if (approval === undefined || typeof approval === "string") continue;
    const param = `manifest.tools[${i}].approval`;
    try {
      new AjvJsonSchemaValidator().getValidator(approval.when as JsonSchemaType);
    } catch (error) {
      const message = errorMessage(error);
      return { param, message: `the approval condition of tool ${tool.name} does not compile: ${message}` };
    }
  }
  return undefined;
}
