import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO } from './proxy.js';

/** Debian's Chromium (`.ci/run` installs it); playwright's own browser downloads cannot work here. */
export const CHROMIUM = process.env['METACLAW_TEST_CHROMIUM'] ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Where the browser tests save a screenshot of each page (kept out of git). */
export const SCREENSHOTS = join(REPO, 'test-artifacts', 'dashboard');

/** Why browser tests cannot run here, or undefined when they can. */
export function browserMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install chromium, as .ci/run does)`;
}

export function launchBrowser(extraFlags: string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: [...FLAGS, ...extraFlags] });
}

/** A page that remembers every console error and uncaught page error, and every request it made. */
export interface WatchedPage {
  page: Page;
  /** console errors and page errors, as text */
  errors: string[];
  /** every URL the page asked for */
  requested: string[];
  close: () => Promise<void>;
}

export async function openPage(browser: Browser, options: { width?: number; height?: number; colorScheme?: 'light' | 'dark' } = {}): Promise<WatchedPage> {
  const context = await browser.newContext({
    viewport: { width: options.width ?? 1280, height: options.height ?? 900 },
    colorScheme: options.colorScheme ?? 'light',
  });
  const page = await context.newPage();
  const errors: string[] = [];
  const requested: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`page: ${error.message}`));
  page.on('request', (request) => requested.push(request.url()));
  return { page, errors, requested, close: () => context.close() };
}

/** Saves a full-page screenshot as test-artifacts/dashboard/<name>.png and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

export type PageOptions = Parameters<typeof openPage>[1] & {
  /** console errors the test expects (Chromium logs every failed fetch, so a test of a 404 allows that one) */
  allowErrors?: RegExp;
};

/** Opens a watched page, runs the test's steps on it, then asserts the page logged no unexpected error, and closes it. */
export async function withPage(browser: Browser, options: PageOptions, use: (watched: WatchedPage) => Promise<void>): Promise<void> {
  const watched = await openPage(browser, options);
  try {
    await use(watched);
    assert.deepEqual(
      watched.errors.filter((error) => !options.allowErrors?.test(error)),
      [],
      'the page logged no console or page error',
    );
  } finally {
    await watched.close();
  }
}
