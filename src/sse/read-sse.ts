/**
 * Reads a text/event-stream body into whole events, using eventsource-parser
 * (spec-conformant framing) rather than regex over `data:` lines.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";

export type SseEvent = { event: string | undefined; data: string };

/** Yields each complete event; a trailing partial event (cut stream) is not yielded. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const queue: SseEvent[] = [];
  const parser = createParser({
    onEvent: (message: EventSourceMessage) => queue.push({ event: message.event, data: message.data }),
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    while (queue.length > 0) yield queue.shift() as SseEvent;
  }
  parser.feed(decoder.decode());
  while (queue.length > 0) yield queue.shift() as SseEvent;
}

/** Parses a complete SSE body; a trailing event without its blank line (a cut stream) is not returned. */
export function parseSseText(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = createParser({
    onEvent: (message: EventSourceMessage) => events.push({ event: message.event, data: message.data }),
  });
  parser.feed(text);
  return events;
}
