/**
 * The event order of a streamed Messages turn, as Anthropic's streaming reference
 * gives it (tests only; https://docs.anthropic.com/en/docs/build-with-claude/streaming):
 * message_start, then per content block start, delta, stop, then message_delta and
 * message_stop. Written from the reference, not from the renderer.
 */
const blockEvents = ["content_block_start", "content_block_delta", "content_block_stop"];

/** The event names of a streamed turn with `blocks` content blocks. */
export function messagesTurnEvents(blocks: number): string[] {
  return [
    "message_start",
    ...Array.from({ length: blocks }, () => blockEvents).flat(),
    "message_delta",
    "message_stop",
  ];
}
