import { logLineWith } from './log.js';
import { homeWithStarterSkills, startProxy, type ProxyHandle } from './proxy.js';
import { ScriptedUpstream, type Handler } from './upstream.js';

/** A started proxy whose LLM API is a scripted upstream: the start of most end-to-end tests. */
export interface ScriptedProxy {
  upstream: ScriptedUpstream;
  proxy: ProxyHandle;
  /** Stops the proxy (deleting its home), then the upstream. */
  close: () => Promise<void>;
}

export interface ScriptedProxyOptions {
  /** Install the starter skills in the fresh home (with the real CLI). */
  starterSkills?: boolean;
  /** A home the test has prepared (instead of a fresh one); deleted on close. */
  home?: string;
  /** config.yaml beyond `llm`, which always points at the scripted upstream. */
  config?: Record<string, unknown>;
  /** Environment for `metaclaw start` (e.g. METACLAW_PROXY_API_KEY). */
  env?: Record<string, string>;
  /** How the upstream answers, set before the proxy starts (default: the scripted upstream's greeting). */
  upstreamHandler?: Handler;
  /**
   * Resolve only once the memory housekeeping every start queues is done. Without it, a test that
   * stores memories older than housekeeping's 30 stale days races it: whether their importance is
   * lowered before its search depends on which came first.
   */
  afterHousekeeping?: boolean;
}

/** Starts a scripted upstream and a proxy in front of it; if the proxy fails to start, the upstream is closed again. */
export async function startScriptedProxy(options: ScriptedProxyOptions = {}): Promise<ScriptedProxy> {
  const upstream = await ScriptedUpstream.start();
  try {
    if (options.upstreamHandler) upstream.defaultHandler = options.upstreamHandler;
    const home = options.home ?? (options.starterSkills ? await homeWithStarterSkills() : undefined);
    const proxy = await startProxy({
      ...(home ? { home } : {}),
      ...(options.env ? { env: options.env } : {}),
      config: { ...options.config, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } },
    });
    if (options.afterHousekeeping)
      await logLineWith(proxy.home, 'memory housekeeping done').catch(async (error: unknown) => {
        await proxy.dispose();
        throw error;
      });
    return {
      upstream,
      proxy,
      close: async () => {
        await proxy.dispose();
        await upstream.close();
      },
    };
  } catch (error) {
    await upstream.close();
    throw error;
  }
}
