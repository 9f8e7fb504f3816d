import type { TurnType, UserRequest } from '../conversation/index.js';
import type { RequestFormat } from '../types/index.js';

/** What a context provider may look at to decide what to add to one request. */
export interface ContextRequest {
  format: RequestFormat;
  /** The client's body after MetaClaw's own keys were stripped. Providers must not modify it. */
  body: Record<string, unknown>;
  userRequest: UserRequest;
  turnType: TurnType;
  scope: string;
  sessionId: string;
}

/** One provider's contribution, already rendered. */
export interface ContextSection {
  provider: string;
  text: string;
  tokens: number;
  /** What was chosen and why (ids, scores), kept on the turn record and shown by /v1/requests/{id}. */
  details: unknown;
}

export interface ContextProvider {
  readonly name: string;
  /** Synchronous when it can be (keyword retrieval); a promise when it must wait (embeddings). */
  provide(request: ContextRequest): ContextSection | undefined | Promise<ContextSection | undefined>;
}

export interface InjectionRecord {
  placement: 'system_append' | 'system_new';
  tokens: number;
  sections: Array<{ provider: string; tokens: number; details: unknown }>;
  text: string;
}

export interface Augmentation {
  body: Record<string, unknown>;
  injected: InjectionRecord | null;
  failures: Array<{ provider: string; error: string }>;
}
