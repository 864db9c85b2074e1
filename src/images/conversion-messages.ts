/** The messages between the conversion pool and its workers (structured clone; PNG and WebP bytes transferred). */
import type { WebpSettings } from "./settings.ts";

export type WorkerRequest =
  | { id: number; kind: "warm_up"; settings: WebpSettings }
  | { id: number; kind: "convert"; png: Uint8Array; settings: WebpSettings };

export type WorkerReply =
  | { id: number; kind: "warmed"; ms: number }
  | { id: number; kind: "converted"; webp: Uint8Array; ms: number }
  | { id: number; kind: "failed"; stage: "decode" | "encode"; message: string };
