import OpenAI from 'openai';
import type { Browser } from 'playwright-core';
import { launchBrowser } from './browser.js';
import { recordedTurn, type ProxyHandle } from './proxy.js';
import { startScriptedProxy, type ScriptedProxy, type ScriptedProxyOptions } from './scripted-proxy.js';

/** What every dashboard test starts from: a proxy in its own home, its scripted upstream, and Chromium. */
export interface DashboardProxy extends ScriptedProxy {
  browser: Browser;
  /** Closes the browser, then stops the proxy (deleting its home) and the upstream. */
  close: () => Promise<void>;
}

/** Starts a proxy on a scripted upstream (see `startScriptedProxy`), then Chromium; if Chromium fails to start, the proxy is stopped again. */
export async function startDashboardProxy(options: ScriptedProxyOptions = {}): Promise<DashboardProxy> {
  const scripted = await startScriptedProxy(options);
  let browser: Browser;
  try {
    browser = await launchBrowser();
  } catch (error) {
    await scripted.close();
    throw error;
  }
  return {
    ...scripted,
    browser,
    close: async () => {
      await browser.close();
      await scripted.close();
    },
  };
}

/**
 * Asks the proxy one question through the OpenAI SDK in `session` and returns the turn once the
 * proxy has recorded it (what the dashboard shows is read from that record).
 */
export async function askRecorded(proxy: ProxyHandle, session: string, question: string): Promise<any> {
  const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  const { response } = await client.chat.completions
    .create({ model: 'gpt-test', messages: [{ role: 'user', content: question }] }, { headers: { 'x-session-id': session } })
    .withResponse();
  return recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!);
}
