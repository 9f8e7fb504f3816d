import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

/**
 * Token counts for budgets. Exact counts (o200k) are computed once per stored item; per-request
 * text uses the same counter, which runs in microseconds for the short texts involved.
 */
export function countTextTokens(text: string): number {
  return countTokens(text);
}
