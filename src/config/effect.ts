import { isDeepStrictEqual } from 'node:util';
import { presetFor } from './providers.js';
import { missingOpdTeacherKeys, type ConfigValues } from './schema.js';
import type { KeyDefinition } from './types.js';

/**
 * What a loaded config would do differently from what it says: keys MetaClaw-TS accepts but does
 * not act on, and settings that need another key to take effect. Each becomes a warning at load, so
 * nothing falls back silently.
 */

/** The warning for `value` of a key that has no effect here; undefined when the key acts (or is left at its default). */
export function noEffectWarning(definition: KeyDefinition, value: unknown): string | undefined {
  if (!definition.noEffect || isDeepStrictEqual(value, definition.default)) return undefined;
  return `${definition.key} is accepted for compatibility with MetaClaw but has no effect in MetaClaw-TS (${definition.noEffect.reason})`;
}

/** Retrieval modes that need an embeddings endpoint, set without one. */
export function dependencyWarnings(values: ConfigValues, explicitKeys: ReadonlySet<string>): string[] {
  const warnings: string[] = [];
  const missing = missingOpdTeacherKeys(values);
  if (missing.length > 0) warnings.push(`opd.enabled needs ${missing.join(' and ')}: training runs without the teacher`);
  // A provider with an embeddings endpoint supplies one when it answers (`metaclaw doctor` says whether it does).
  if (presetFor(values['llm.provider'])?.embeddingModel) return warnings;
  const skillsMode = values['skills.retrieval_mode'];
  if (explicitKeys.has('skills.retrieval_mode') && skillsMode !== 'template' && !(values['skills.embedding.api_base'] && values['skills.embedding.model'])) {
    warnings.push(
      `skills.retrieval_mode is ${skillsMode}, but skills.embedding.api_base and skills.embedding.model are not both set: skills are found by keywords only`,
    );
  }
  if (
    explicitKeys.has('memory.retrieval_mode') &&
    values['memory.retrieval_mode'] === 'embedding' &&
    !(values['memory.embedding.api_base'] && values['memory.embedding.model'])
  ) {
    warnings.push(
      'memory.retrieval_mode is embedding, but memory.embedding.api_base and memory.embedding.model are not both set: memories are recalled by keywords only',
    );
  }
  return warnings;
}
