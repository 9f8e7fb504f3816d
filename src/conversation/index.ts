export {
  readTurnSignals,
  stripNonStandardKeys,
  deriveScope,
  bounded,
  MAX_SESSION_ID_LENGTH,
  sessionIdCandidates,
  NON_STANDARD_BODY_KEYS,
  type TurnSignals,
  type TurnType,
  type IdentitySource,
  type ScopeHints,
} from './signals.js';
export { extractUserRequest, cleanUserText, userMessageText, type UserRequest } from './user-request.js';
export { messageText, textParts } from './message-text.js';
export { CLIENT_PROFILES, recognizeClient, sideRequestOf, RequestView } from './profiles/registry.js';
export type { ClientProfile, ClientProfileName, SideRequestKind } from './profiles/types.js';
export { responsesConversation, type ConversationMessage } from './responses-input.js';
export { FingerprintSessions, type Placement } from './fingerprint-sessions.js';
export { MainTurnActivity, lastRecordedMainTurn } from './main-activity.js';
export { ConversationStore, type ConversationStoreOptions, type RecordingCounts } from './store.js';
export { TurnJournal } from './turn-journal.js';
export { UserLanguages, requestLanguages } from './languages.js';
export { IdleSessionSweeper } from './sweeper.js';
export type * from './types.js';
export { TurnWriter, BATCH_WINDOW_MS, MAX_CHUNK_TURNS } from './turn-writer.js';
export type { WriterRequest, WriterReply, WriterThreadEvents } from './writer-thread.js';
export { SpooledRecorder, type SpoolStatus, type SpooledRecorderOptions, type TurnSinkPort } from './spooled-recorder.js';
export { HeldTurns } from './held-turns.js';
export { RemoteConversation, type RemoteConversationReads } from './remote-conversation.js';
