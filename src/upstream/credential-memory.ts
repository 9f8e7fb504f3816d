import type { ClientCredentials } from './endpoint.js';

/**
 * The client's own key, per upstream, held in memory only (never stored or logged). When no key
 * is configured, learning jobs call the user's API with the key their agent uses; after a restart
 * they wait until the agent has sent a request again.
 */
export class CredentialMemory {
  private readonly byUpstream = new Map<string, ClientCredentials>();

  remember(upstream: string, credentials: ClientCredentials): void {
    if (credentials.authorization || credentials.apiKey) this.byUpstream.set(upstream, { ...credentials });
  }

  recall(upstream: string): ClientCredentials {
    return this.byUpstream.get(upstream) ?? {};
  }
}
