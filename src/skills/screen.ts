import { injectionReason } from '../context/index.js';

/**
 * Why a skill's text reads like prompt injection (the same screen as memory), or undefined. Such a
 * skill is refused by import and evolution unless forced, and flagged by `skills doctor`.
 */
export function skillInjectionReason(skill: { description: string; body: string }): string | undefined {
  return injectionReason(skill.description) ?? injectionReason(skill.body);
}
