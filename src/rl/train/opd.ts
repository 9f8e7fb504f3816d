/**
 * On-policy distillation (OPD): MetaClaw's per-token reverse-KL penalty toward a teacher, folded into
 * the advantages: term_t = −coef · (student logprob_t − teacher logprob_t). Where the student is less
 * sure than the teacher of its own token (−0.5 vs −0.3), the term is positive (+0.2 at coef 1): the
 * token is pushed up toward the teacher. The teacher logprobs must be aligned to the sampled response
 * tokens, one per token.
 */
export function klPenaltyTerms(studentLogprobs: readonly number[], teacherLogprobs: readonly number[], coefficient: number): number[] {
  if (studentLogprobs.length !== teacherLogprobs.length) {
    throw new RangeError(`teacher logprobs (${teacherLogprobs.length}) are not aligned to the response (${studentLogprobs.length} tokens)`);
  }
  return studentLogprobs.map((student, index) => {
    const term = -coefficient * (student - teacherLogprobs[index]!);
    return Number.isFinite(term) ? term : 0;
  });
}
