import { createTwoFilesPatch } from 'diff';
import { SkillError } from '../errors.js';
import type { VersionRow } from './history.js';

export interface VersionPatch {
  from: number | null;
  to: number;
  patch: string;
}

/**
 * A unified diff between two recorded versions of a skill (`metaclaw skills diff`, the dashboard);
 * by default the latest version against the one before it.
 */
export function diffVersions(name: string, versions: readonly VersionRow[], choice: { from?: number | undefined; to?: number | undefined } = {}): VersionPatch {
  if (versions.length === 0) throw new SkillError(`No recorded versions of ${name}.`, 'skill_not_found');
  const to = choice.to === undefined ? versions.at(-1)! : versions.find((row) => row.version === choice.to);
  if (!to) throw new SkillError(`${name} has no version ${choice.to}.`, 'version_not_found');
  const from = choice.from === undefined ? versions.filter((row) => row.id < to.id).at(-1) : versions.find((row) => row.version === choice.from);
  if (choice.from !== undefined && !from) throw new SkillError(`${name} has no version ${choice.from}.`, 'version_not_found');
  const patch = createTwoFilesPatch(
    `${name}@v${from?.version ?? 0}`,
    `${name}@v${to.version}`,
    from?.content ?? '',
    to.content,
    from ? `${from.action}` : 'nothing',
    to.action,
  );
  return { from: from?.version ?? null, to: to.version, patch };
}
