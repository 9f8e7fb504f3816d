export { MetaclawRuntime, type RuntimeOptions } from './app.js';
export { isLoopbackHost } from '../shared/loopback.js';
export { readPidFile, writePidFile, removePidFile, isProcessAlive, type PidInfo } from './pid-file.js';
export {
  describeRetrieval,
  probeProviderEmbeddings,
  retrievalModes,
  saveProbe,
  storedProbe,
  teamSkillsRetrieval,
  type ProviderProbe,
  type RetrievalDecision,
} from './retrieval-mode.js';
export { judgeSettings } from './settings.js';
