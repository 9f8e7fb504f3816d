/** claw_type "none": MetaClaw wires no agent; the user points theirs at the proxy by hand. */
import { normalizeTarget, openAIBaseUrl } from './target.js';
import type { ClawAdapter } from './types.js';

export const noneAdapter: ClawAdapter = {
  type: 'none',
  name: 'no agent',
  detect: async () => ({
    type: 'none',
    name: 'no agent',
    installed: false,
    configPath: undefined,
    configExists: false,
    binaryPath: undefined,
    wired: false,
    notes: [],
  }),
  apply: async (target) => ({
    type: 'none',
    changed: false,
    configPath: undefined,
    restarted: false,
    messages: [`No agent is wired (claw type "none"). Point your agent at ${openAIBaseUrl(normalizeTarget(target))} yourself.`],
  }),
  verify: async () => ({ wired: true, problems: [], messages: ['Claw type "none" wires nothing, so there is nothing to verify.'] }),
  unwire: async () => ({ restored: false, exact: true, restarted: false, messages: ['Claw type "none" wires nothing, so there is nothing to undo.'] }),
};
