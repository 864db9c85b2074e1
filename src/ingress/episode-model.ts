/**
 * The one model an episode serves, for the model listings of every ingress
 * (`GET …/models`, `GET …/models/{id}`): its id and capabilities from the model
 * table (src/models), or the error a request for another model id gets. Whatever
 * name a client sends in a request, the upstream runs the episode's model; the
 * listings say which, with its real limits.
 */
import type { Episode } from "../episodes/episode.ts";
import { SidecarError } from "../lib/errors.ts";
import type { ModelCapabilities } from "../models/model-capabilities.ts";
import type { ModelCatalog } from "../models/model-catalog.ts";

export type ServedModel = { id: string; capabilities: ModelCapabilities };

export function servedModel(episode: Episode, models: ModelCatalog): ServedModel {
  const resolution = models.resolve(episode.model);
  if (!resolution.ok) throw new SidecarError("invalid_request", resolution.problem, { param: "model" });
  return { id: resolution.id, capabilities: resolution.capabilities };
}

/** The served model when `id` names it; otherwise a 404 naming the one this episode serves. */
export function requestedModel(episode: Episode, models: ModelCatalog, id: string): ServedModel {
  const served = servedModel(episode, models);
  if (id !== served.id)
    throw new SidecarError(
      "not_found",
      `model ${JSON.stringify(id.slice(0, 200))} is not served by episode ${episode.id}: its model is ${served.id}`,
      { param: "model" },
    );
  return served;
}
