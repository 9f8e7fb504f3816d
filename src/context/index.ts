export { ContextPlanner, CONTEXT_OPEN, CONTEXT_CLOSE } from './planner.js';
export { appendToSystemPrompt } from './placement.js';
export { promptTokens } from './trim.js';
export type { ContextProvider, ContextRequest, ContextSection, Augmentation, InjectionRecord } from './types.js';
export { injectionReason, escapeContextTags } from './screen.js';
