/**
 * Writes SSE frames. Each frame is produced whole, so a frame is always written
 * in one piece (strict clients require it).
 */
export function formatSseFrame(data: unknown, event?: string): string {
  const payload = typeof data === "string" ? data : JSON.stringify(data);
  return `${event === undefined ? "" : `event: ${event}\n`}data: ${payload}\n\n`;
}
