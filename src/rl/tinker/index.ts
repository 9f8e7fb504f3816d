/** The Tinker JSON wire (Tinker and MinT): backend selection, the `RlBackend`, its samplers. */
export { TinkerBackend, type TinkerBackendOptions } from './backend.js';
export { TinkerSampler } from './sampler.js';
export {
  inferBackendKind,
  resolveApiKey,
  resolveBaseUrl,
  selectBackend,
  type BackendSelection,
  type BackendSelectionInput,
  type ConfiguredBackend,
} from './select.js';
export { USER_AGENT, backendLabel, type BackendKind, type RetryPolicy } from './transport.js';
export { DEFAULT_MINT_BASE_URL, DEFAULT_TINKER_BASE_URL, WIRE_SDK_VERSION } from './wire.js';
