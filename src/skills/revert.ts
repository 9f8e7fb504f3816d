import { SkillError } from '../errors.js';
import type { VersionRow } from './history.js';
import { parseSkillFile } from './skill-file.js';
import type { SkillDraft } from './types.js';

/**
 * What reverting a skill writes, as the next version: the draft of a recorded version (`toVersion`,
 * or by default the last one before `currentVersion`), and the history's source line for it. One
 * rule for the personal library and the team store. Throws SkillError when there is no such version
 * or it no longer parses.
 */
export function revertDraft(
  name: string,
  currentVersion: number | undefined,
  versions: readonly Pick<VersionRow, 'version' | 'content'>[],
  toVersion?: number,
): { draft: SkillDraft; source: string } {
  if (currentVersion === undefined && versions.length === 0) throw new SkillError(`No skill named ${name}.`);
  // Removals are recorded with empty content: nothing to restore.
  const restorable = versions.filter((row) => row.content !== '');
  const target =
    toVersion === undefined
      ? restorable.filter((row) => row.version < (currentVersion ?? Number.POSITIVE_INFINITY)).at(-1)
      : restorable.find((row) => row.version === toVersion);
  if (!target) throw new SkillError(toVersion === undefined ? `${name} has no earlier version to revert to` : `${name} has no recorded version ${toVersion}`);
  const parsed = parseSkillFile(target.content, `${name}@v${target.version}`, name);
  if ('reason' in parsed) throw new SkillError(`version ${target.version} of ${name} cannot be restored: ${parsed.reason}`);
  const old = parsed.skill;
  return {
    draft: {
      name,
      description: old.description,
      category: old.category,
      body: old.body,
      origin: old.origin,
      extra: old.extra,
      sourceSessions: old.sourceSessions,
    },
    source: `revert to v${target.version}`,
  };
}
