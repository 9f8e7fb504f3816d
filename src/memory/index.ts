export {
  MemoryService,
  HOUSEKEEPING_JOB,
  EMBED_JOB,
  REINDEX_JOB,
  type MemorySettings,
  type MemoryDependencies,
  type MemoryConversation,
  type RelatedRecall,
  type IngestTurn,
  type QuotedTexts,
} from './service.js';
export { MemoryStore, newMemoryId, type MemoryPatch, type ScopeStats } from './store.js';
export { detectRules } from './rules.js';
export { timeWindowOf } from './time-window.js';
export {
  DEFAULT_MEMORY_TYPE,
  MEMORY_TYPES,
  SHARED_SCOPE,
  type MemoryUnit,
  type MemoryDraft,
  type MemoryType,
  type MemoryHit,
  type MemoryOrigin,
} from './types.js';
export type { HousekeepingReport } from './housekeeping.js';
export { MemoryRecording, RECORD_TURN_JOB, EXTRACT_JOB, type MemoryRecordingSettings } from './recording.js';
export {
  presentMemory,
  exportMemory,
  exportUnits,
  importLines,
  importTargets,
  isExpectedSkip,
  ingestTurnSchema,
  MAX_INGEST_TURNS,
  memoryContentSchema,
  type MemoryImportReport,
} from './transfer.js';
export { sqliteFileKind, readPythonStore, PythonStoreError, PYTHON_STORE_VERSION, type PythonStore } from './python-store.js';
export {
  livePythonRows,
  pythonImportLines,
  pythonImportReport,
  pythonImportOf,
  pythonStorePath,
  rememberPythonImport,
  type PythonImportLines,
  type RememberedImport,
} from './python-import.js';
export { personalMemoryApi, type MemoryApi } from './api.js';
