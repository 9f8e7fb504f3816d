export { SkillsService, EVOLVE_JOB, type SkillsSettings, type SkillsDependencies, type ChangeResult, type EvolutionResult } from './service.js';
export { SkillLibrary, type LibraryChange } from './library.js';
export { parseSkillFile, serializeSkill, parseLegacyFrontmatter, SKILL_NAME } from './skill-file.js';
export { isCorrection, type SkillCredit } from './credit.js';
export { renderSkills, SKILLS_HEADING } from './render.js';
export { installStarterSkills, importSkills, exportSkills, STARTER_DIR, type ImportReport } from './transfer.js';
export type { Skill, SkillDraft, SkillProblem, SkillOrigin } from './types.js';
export type { VersionRow } from './history.js';
export type { ProposalRow } from './proposals.js';
