/**
 * What observers read from auxiliary record lines, as a lenient zod schema listing
 * only the fields they use (a line that does not match is simply not counted, never
 * an error). Exchange lines and ledger events need none: observers get them as
 * written, typed by records/exchange-lines.ts and ledger/events.ts.
 */
import { z } from "zod";

export const auxiliarySchema = z.object({
  path: z.string(),
  status: z.number(),
  protocol: z.string().optional(),
  operation: z.string().optional(),
});

/** "2xx", "4xx", "5xx" for an HTTP status, "error" when the attempt got none (connection, timeout). */
export function statusClass(status: number | undefined): string {
  return status === undefined ? "error" : `${Math.floor(status / 100)}xx`;
}
