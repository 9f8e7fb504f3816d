export { SkillsService, type SkillsSettings, type SkillsDependencies, type ChangeResult, type UnchangedResult, type EvolutionResult } from './service.js';
export { SkillLibrary, type LibraryChange } from './library.js';
export {
  parseSkillFile,
  serializeSkill,
  sameSkillContent,
  parseLegacyFrontmatter,
  SKILL_NAME,
  MAX_NAME_LENGTH,
  MAX_CATEGORY_LENGTH,
  categorySchema,
} from './skill-file.js';
export { isCorrection, presentCredit, SkillCreditStore, type SkillCredit } from './credit.js';
export { renderSkills, SKILLS_HEADING } from './render.js';
export { skillInjectionReason } from './screen.js';
export { installStarterSkills, importSkills, exportSkills, STARTER_DIR, type ImportReport } from './transfer.js';
export type { Skill, SkillDraft, SkillProblem, SkillOrigin } from './types.js';
export { evolutionLogFile, ON_DISK, SkillHistory, type ChangeOnDisk, type LibrarySwitch, type VersionRow } from './history.js';
export { loggedStatusText, skillLog, type LoggedEvent } from './evolution-log.js';
export { SkillQuotes } from './quotes.js';
export { diffVersions, type VersionPatch } from './version-diff.js';
export { presentProposal, type ProposalRow } from './proposals.js';
export { SkillsRecording, EVOLVE_JOB, type SkillsRecordingSettings } from './recording.js';
export { SkillMirror } from './mirror.js';
export type { RetrievedSkill, SkillSource } from './retrieval.js';
export { revertDraft } from './revert.js';
