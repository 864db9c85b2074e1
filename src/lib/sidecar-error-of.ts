/**
 * The SidecarError a call throws, for the unit tests beside the code that assert
 * its kind, status, param and message: anything else thrown is rethrown, and a call
 * that throws nothing fails the test.
 */
import { SidecarError } from "./errors.ts";

export function sidecarErrorOf(fn: () => unknown): SidecarError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SidecarError) return error;
    throw error;
  }
  throw new Error("expected a SidecarError");
}
