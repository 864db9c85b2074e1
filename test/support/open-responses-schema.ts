/**
 * Validators generated from the vendored Open Responses OpenAPI document
 * (fixtures/open-responses/openapi.json): the document's component schemas are
 * compiled by ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1), nothing is
 * restated by hand. A streamed event is validated against the component schema
 * whose `type` constant is the event's type, as the document's discriminator says.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import Ajv2020, { type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";

const documentPath = resolve(import.meta.dir, "../../fixtures/open-responses/openapi.json");
type OpenApiDocument = { info: { version: string }; components: { schemas: Record<string, SchemaNode> } };
type SchemaNode = { properties?: { type?: { enum?: string[] } } };

const document = JSON.parse(readFileSync(documentPath, "utf8")) as OpenApiDocument;
export const specVersion = document.info.version;

// strict:false: the document carries OpenAPI annotations (x-enumDescriptions, discriminator) ajv does not know.
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ $id: "openresponses", components: document.components });

const compiled = new Map<string, ValidateFunction>();
function validatorFor(component: string): ValidateFunction {
  let validate = compiled.get(component);
  if (!validate) {
    if (!document.components.schemas[component]) throw new Error(`no component schema ${component}`);
    validate = ajv.compile({ $ref: `openresponses#/components/schemas/${component}` });
    compiled.set(component, validate);
  }
  return validate;
}

/** Streamed event type → the component schema that defines it. */
const eventComponents = new Map<string, string>();
for (const [name, schema] of Object.entries(document.components.schemas)) {
  const types = schema.properties?.type?.enum;
  if (name.endsWith("StreamingEvent") && types?.length === 1 && types[0]) eventComponents.set(types[0], name);
}

function describe(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map(
    (e) => `${e.instancePath || "(root)"} ${e.message ?? ""} ${JSON.stringify(e.params)}`,
  );
}

/** Errors of `value` against a named component schema; empty when it validates. */
export function schemaErrors(component: string, value: unknown): string[] {
  const validate = validatorFor(component);
  return validate(value) ? [] : describe(validate.errors);
}

export function responseResourceErrors(value: unknown): string[] {
  return schemaErrors("ResponseResource", value);
}

/** Errors of one streamed event against the schema of its type (an unknown type is an error). */
export function streamingEventErrors(event: unknown): string[] {
  const type = (event as { type?: unknown })?.type;
  const component = typeof type === "string" ? eventComponents.get(type) : undefined;
  if (!component) return [`event type ${JSON.stringify(type)} is not defined by the specification`];
  return schemaErrors(component, event).map((e) => `${type}: ${e}`);
}

/** The specification's error payload (`{type, code, message, param}`), the `error` of an error answer. */
export function errorPayloadErrors(value: unknown): string[] {
  return schemaErrors("ErrorPayload", value);
}
