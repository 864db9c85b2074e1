/** The message of anything thrown: an Error's own, anything else as text (never a cast that reads undefined). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
