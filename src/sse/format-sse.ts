/**
 * Writes SSE frames. Each frame is produced whole, so a frame is always written
 * in one piece (strict clients require it). The data is one line of JSON: JSON
 * text escapes CR and LF inside strings, so a frame can never be split early.
 */
export function formatSseFrame(data: object, event?: string): string {
  return `${event === undefined ? "" : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;
}
