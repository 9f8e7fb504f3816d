import { skillInjectionReason, type Skill, type SkillProblem } from '../skills/index.js';
import { counted } from './plural.js';

/** What `metaclaw skills doctor` checks of a library, and `metaclaw doctor`'s skills line reports. */
export interface SkillsHealth {
  /** Valid skills. */
  skills: number;
  /** SKILL.md files that failed to load, with why (the team store holds none). */
  invalid: SkillProblem[];
  /** Skills whose text reads like prompt injection, by name. */
  suspicious: Array<{ name: string; path: string; reason: string }>;
}

/** The library's health, from its skills and the files that failed to load. */
export function skillsHealth(skills: readonly Skill[], invalid: SkillProblem[]): SkillsHealth {
  const suspicious = skills
    .map((skill) => ({ name: skill.name, path: skill.path, reason: skillInjectionReason(skill) }))
    .filter((item): item is { name: string; path: string; reason: string } => item.reason !== undefined)
    .sort((a, b) => a.name.localeCompare(b.name));
  return { skills: skills.length, invalid, suspicious };
}

/** The health in one line, for `metaclaw doctor`: what is wrong, counted (`metaclaw skills doctor` lists it). */
export function skillsHealthLine(health: SkillsHealth, where: string): { verdict: 'pass' | 'warn'; detail: string; fix?: string } {
  const detail = `${counted(health.skills, 'valid skill')} in ${where}`;
  const wrong = [
    ...(health.invalid.length > 0 ? [`${counted(health.invalid.length, 'invalid SKILL.md file')} skipped`] : []),
    ...(health.suspicious.length > 0 ? [`${counted(health.suspicious.length, 'skill')} reading like a prompt injection`] : []),
  ];
  if (wrong.length === 0) return { verdict: 'pass', detail };
  return { verdict: 'warn', detail: `${detail}; ${wrong.join(', ')}`, fix: 'run `metaclaw skills doctor`: it names each file and what to fix' };
}
