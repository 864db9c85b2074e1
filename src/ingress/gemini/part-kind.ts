/**
 * What a Gemini part holds: exactly one of text, inlineData, functionCall or
 * functionResponse, else a 400 naming the part. A `thoughtSignature` beside it is
 * accepted only as Gemini CLI's placeholder (noted as dropped): the sidecar holds no
 * Google reasoning state that another signature could refer to.
 */
import { invalidField } from "../../lib/errors.ts";
import type { IgnoredFields } from "../ignored-fields.ts";
import type { Part } from "./schema.ts";

const skipThoughtSignature = "skip_thought_signature_validator";

/** The note a part with Gemini CLI's placeholder signature leaves (the same for every such part). */
export const droppedSignatureNote = `thoughtSignature "${skipThoughtSignature}" (dropped)`;

type PartKind = "text" | "inlineData" | "functionCall" | "functionResponse";
const partKinds: readonly PartKind[] = ["text", "inlineData", "functionCall", "functionResponse"];

export function kindOf(part: Part, param: string, notes: IgnoredFields): PartKind {
  if (part.thoughtSignature !== undefined) {
    if (part.thoughtSignature !== skipThoughtSignature) {
      throw invalidField(
        `${param}.thoughtSignature`,
        "only Gemini CLI's placeholder signature is accepted; the sidecar holds no Google reasoning state",
      );
    }
    notes.add(droppedSignatureNote);
  }
  const present = partKinds.filter((k) => part[k] !== undefined);
  const [kind] = present;
  if (present.length !== 1 || kind === undefined) {
    throw invalidField(
      param,
      `a part must hold exactly one of ${partKinds.join(", ")} (found ${present.length === 0 ? "none" : present.join(", ")})`,
    );
  }
  return kind;
}
