import { withCommonWrappers } from './common.js';
import { OPENCLAW_WRAPPERS } from './openclaw.js';
import type { ClientProfile } from './types.js';

/**
 * Any client not recognised. It keeps OpenClaw's wrappers too: OpenClaw forks and channel plugins
 * send its envelope under other names, and stripping it was the behaviour before profiles.
 */
export const generic: ClientProfile = {
  name: 'generic',
  sideRequests: [],
  wrappers: withCommonWrappers(OPENCLAW_WRAPPERS),
};
