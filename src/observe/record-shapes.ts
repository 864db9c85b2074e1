/**
 * What observers read from ledger and auxiliary record lines, as lenient zod
 * schemas listing only the fields they use (a line that does not match is simply
 * not counted, never an error). Exchange lines need none: observers get them as
 * written, typed by records/exchange-lines.ts.
 */
import { z } from "zod";

/** A ledger journal line: its type and the call it concerns (when it concerns one). */
export const ledgerLineSchema = z.object({
  type: z.string(),
  at: z.number().optional(),
  batchId: z.string().optional(),
  exchangeId: z.string().optional(),
  callId: z.string().optional(),
  tool: z.string().optional(),
  code: z.string().optional(),
  reason: z.string().optional(),
  calls: z.array(z.object({ id: z.string(), tool: z.string() })).optional(),
  uncertain: z.array(z.string()).optional(),
});
export type LedgerLine = z.infer<typeof ledgerLineSchema>;

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
