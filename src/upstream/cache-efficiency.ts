/**
 * Cache efficiency of one turn: of the content carried over from the previous turn's
 * prompt, the part that is still an unchanged prefix of it. The provider's context
 * cache serves only an unchanged prefix, so this is the share of the reusable prompt a
 * cache can actually serve: an append-only history gives 1; a context policy that
 * changes an early message of the history on every turn gives nearly 0 even though
 * most of the content is the same. Measured in tokens over prompt blocks
 * (prompt-blocks.ts), so an image weighs what the model pays for it.
 */
import type { PromptBlock } from "./prompt-blocks.ts";

/**
 * `carried`: tokens of the previous prompt's blocks that the current prompt still has
 * (as many times as both have them); `prefix`: tokens of the leading blocks the two
 * prompts share. Efficiency is prefix ÷ carried, 1 when nothing is carried over.
 */
export function measureCacheEfficiency(
  previous: readonly PromptBlock[],
  current: readonly PromptBlock[],
): { efficiency: number; prefixTokens: number; carriedTokens: number } {
  let prefixTokens = 0;
  let common = 0;
  while (common < previous.length && common < current.length) {
    const a = previous[common] as PromptBlock;
    if (a.digest !== (current[common] as PromptBlock).digest) break;
    prefixTokens += a.tokens;
    common += 1;
  }
  const available = new Map<string, number>();
  for (const block of current.slice(common))
    available.set(block.digest, (available.get(block.digest) ?? 0) + 1);
  let carriedTokens = prefixTokens;
  for (const block of previous.slice(common)) {
    const left = available.get(block.digest) ?? 0;
    if (left === 0) continue;
    available.set(block.digest, left - 1);
    carriedTokens += block.tokens;
  }
  return { efficiency: carriedTokens === 0 ? 1 : prefixTokens / carriedTokens, prefixTokens, carriedTokens };
}
