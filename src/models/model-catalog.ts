/**
 * The models an episode may use: the built-in table (builtin-models.ts) with the
 * config's `upstream.models` declarations over it. A built-in model's declaration
 * changes the fields it names; any other model must declare every field. Lookups are
 * pure; `resolve` says exactly what is missing or why the model cannot serve.
 */
import { builtinModels } from "./builtin-models.ts";
import {
  type ModelCapabilities,
  type ModelDeclaration,
  modelCapabilitiesSchema,
  unservableReason,
} from "./model-capabilities.ts";

export type ModelResolution =
  | { ok: true; id: string; capabilities: ModelCapabilities }
  | { ok: false; id: string; problem: string };

export interface ModelCatalog {
  /** The capabilities of a model that can serve an episode, or why it cannot. */
  resolve(id: string): ModelResolution;
}

const fields = Object.keys(modelCapabilitiesSchema.shape) as (keyof ModelCapabilities)[];

export function createModelCatalog(declared: Readonly<Record<string, ModelDeclaration>> = {}): ModelCatalog {
  const resolve = (id: string): ModelResolution => {
    const builtin = Object.hasOwn(builtinModels, id) ? builtinModels[id] : undefined;
    const declaration = Object.hasOwn(declared, id) ? declared[id] : undefined;
    if (!builtin && !declaration)
      return {
        ok: false,
        id,
        problem: `model ${JSON.stringify(id)} is not in the built-in table (docs/models.md): declare its capabilities under upstream.models.${JSON.stringify(id)} (${fields.join(", ")})`,
      };
    const merged = { ...builtin, ...declaration };
    const missing = fields.filter((field) => merged[field] === undefined);
    if (missing.length > 0)
      return {
        ok: false,
        id,
        problem: `model ${JSON.stringify(id)} is not in the built-in table: upstream.models.${JSON.stringify(id)} must also declare ${missing.join(", ")}`,
      };
    const capabilities = modelCapabilitiesSchema.parse(merged);
    const reason = unservableReason(id, capabilities);
    return reason ? { ok: false, id, problem: reason } : { ok: true, id, capabilities };
  };
  return { resolve };
}
