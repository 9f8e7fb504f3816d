import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CLI, cleanEnv, startProxy, tempHome, waitFor } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

/**
 * Google Calendar as a window source: `metaclaw scheduler calendar-auth` signs in with the
 * installed-app flow (loopback redirect, PKCE, state) against a local stand-in for Google's OAuth
 * and Calendar endpoints, writes the token (0600), and a started proxy reads the primary
 * calendar's free/busy time with it, refreshing the access token when it has expired.
 */
class FakeGoogle {
  readonly tokenRequests: URLSearchParams[] = [];
  readonly freeBusyAuth: string[] = [];
  challenge = '';
  url = '';
  private constructor(readonly server: http.Server) {}

  static async start(busy: () => Array<{ start: string; end: string }>): Promise<FakeGoogle> {
    const holder: { fake?: FakeGoogle } = {};
    const server = http.createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        const fake = holder.fake!;
        const send = (status: number, value: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
        if (request.url === '/token') {
          const form = new URLSearchParams(body);
          fake.tokenRequests.push(form);
          if (form.get('grant_type') === 'authorization_code') {
            const verifier = form.get('code_verifier') ?? '';
            if (form.get('code') !== 'consented-code' || createHash('sha256').update(verifier).digest('base64url') !== fake.challenge)
              return send(400, { error: 'invalid_grant' });
            // Already expired: the proxy must refresh before its first call.
            return send(200, {
              access_token: 'access-1',
              expires_in: 0,
              refresh_token: 'refresh-1',
              scope: 'https://www.googleapis.com/auth/calendar.readonly',
              token_type: 'Bearer',
            });
          }
          if (form.get('grant_type') === 'refresh_token' && form.get('refresh_token') === 'refresh-1' && form.get('client_secret') === 'client-secret')
            return send(200, { access_token: 'access-2', expires_in: 3600, token_type: 'Bearer' });
          return send(400, { error: 'invalid_grant' });
        }
        if (request.url === '/calendar/v3/freeBusy' && request.method === 'POST') {
          fake.freeBusyAuth.push(String(request.headers['authorization']));
          if (request.headers['authorization'] !== 'Bearer access-2') return send(401, { error: { code: 401 } });
          const asked = JSON.parse(body) as { timeMin: string; timeMax: string; items: Array<{ id: string }> };
          assert.equal(asked.items[0]?.id, 'primary');
          return send(200, { kind: 'calendar#freeBusy', timeMin: asked.timeMin, timeMax: asked.timeMax, calendars: { primary: { busy: busy() } } });
        }
        send(404, { error: 'not found' });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const fake = new FakeGoogle(server);
    fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    holder.fake = fake;
    return fake;
  }
}

describe('Google Calendar (OAuth, read-only) as a window source', () => {
  let google: FakeGoogle;
  let upstream: ScriptedUpstream;
  let home: string;
  const now = Date.now();
  const meeting = { start: new Date(now - 10 * 60_000).toISOString(), end: new Date(now + 50 * 60_000).toISOString() };

  before(async () => {
    google = await FakeGoogle.start(() => [meeting]);
    upstream = await ScriptedUpstream.start();
    home = tempHome();
  });
  after(async () => {
    google.server.close();
    await upstream.close();
    rmSync(home, { recursive: true, force: true });
  });

  test('calendar-auth: the consent URL asks for read-only access with PKCE and a state; the redirect with the code writes a 0600 token in google-auth form', async () => {
    const credentials = join(home, 'client_secret.json');
    writeFileSync(
      credentials,
      JSON.stringify({
        installed: {
          client_id: 'client-id.apps.googleusercontent.com',
          client_secret: 'client-secret',
          auth_uri: `${google.url}/auth`,
          token_uri: `${google.url}/token`,
        },
      }),
    );
    writeFileSync(join(home, 'config.yaml'), `scheduler:\n  calendar:\n    credentials_path: ${credentials}\n`);
    const child = spawn(process.execPath, [CLI, 'scheduler', 'calendar-auth', '--no-browser'], { env: cleanEnv(home), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
    const consent = new URL(await waitFor(() => /^(http\S+\/auth\?\S+)$/m.exec(stdout)?.[1], 10_000));
    assert.equal(consent.searchParams.get('scope'), 'https://www.googleapis.com/auth/calendar.readonly');
    assert.equal(consent.searchParams.get('access_type'), 'offline');
    assert.equal(consent.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(consent.searchParams.get('client_id'), 'client-id.apps.googleusercontent.com');
    const redirect = new URL(consent.searchParams.get('redirect_uri')!);
    assert.equal(redirect.hostname, '127.0.0.1', 'the loopback redirect of installed apps');
    google.challenge = consent.searchParams.get('code_challenge')!;

    // The browser after consent: Google redirects to the loopback address with the code and the state.
    const back = await fetch(`${redirect.origin}/?code=consented-code&state=${consent.searchParams.get('state')}&scope=calendar.readonly`);
    assert.equal(back.status, 200);
    assert.equal(await exited, 0, stderr);
    assert.match(stdout, /Signed in .*calendar_token\.json \(mode 0600\)/);

    const tokenPath = join(home, 'calendar_token.json');
    assert.equal(statSync(tokenPath).mode & 0o777, 0o600);
    const token = JSON.parse(readFileSync(tokenPath, 'utf8')) as Record<string, unknown>;
    assert.equal(token['refresh_token'], 'refresh-1');
    assert.equal(token['token_uri'], `${google.url}/token`);
    assert.equal(token['client_id'], 'client-id.apps.googleusercontent.com');
    assert.deepEqual(token['scopes'], ['https://www.googleapis.com/auth/calendar.readonly']);
    assert.ok(!stdout.includes('client-secret') && !stderr.includes('client-secret'), 'the client secret is never printed');
  });

  test('a redirect with a wrong state is refused, and calendar-auth fails saying so', async () => {
    const other = tempHome();
    try {
      const credentials = join(other, 'client.json');
      writeFileSync(
        credentials,
        JSON.stringify({ installed: { client_id: 'c', client_secret: 's', auth_uri: `${google.url}/auth`, token_uri: `${google.url}/token` } }),
      );
      const child = spawn(process.execPath, [CLI, 'scheduler', 'calendar-auth', '--no-browser', '--credentials', credentials], {
        env: cleanEnv(other),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
      const consent = new URL(await waitFor(() => /^(http\S+\/auth\?\S+)$/m.exec(output)?.[1], 10_000));
      const redirect = new URL(consent.searchParams.get('redirect_uri')!);
      const forged = await fetch(`${redirect.origin}/?code=consented-code&state=not-the-state`);
      assert.equal(forged.status, 400);
      assert.notEqual(await exited, 0);
      assert.match(output, /sign-in failed: .*state mismatch/);
      assert.throws(() => statSync(join(other, 'calendar_token.json')), 'no token written');
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  test('a started proxy reads the busy time of the primary calendar with the token, refreshing the expired access token first', async () => {
    const proxy = await startProxy({
      home,
      env: { METACLAW_GOOGLE_API_BASE: google.url },
      config: {
        llm: { api_base: `${upstream.url}/v1`, api_key: 'k' },
        scheduler: {
          enabled: true,
          idle_threshold_minutes: 1,
          sleep_start: '04:00',
          sleep_end: '04:01',
          calendar: { credentials_path: join(home, 'client_secret.json') },
        },
      },
    });
    try {
      const report = await waitFor(async () => {
        const result = await proxy.cli(['scheduler', 'status', '--json']);
        const current = JSON.parse(result.stdout) as {
          calendar: { source: string; loaded_at: string | null; busy_intervals: number; error: string | null };
          sources: Record<string, { open: boolean; detail: string }>;
        };
        return current.calendar?.loaded_at ? current : undefined;
      }, 15_000);
      assert.equal(report.calendar.error, null);
      assert.equal(report.calendar.source, 'Google Calendar (primary)');
      assert.equal(report.calendar.busy_intervals, 1);
      assert.ok(
        google.tokenRequests.some((form) => form.get('grant_type') === 'refresh_token'),
        'the expired access token was refreshed',
      );
      assert.deepEqual([...new Set(google.freeBusyAuth)], ['Bearer access-2']);
      const token = JSON.parse(readFileSync(join(home, 'calendar_token.json'), 'utf8')) as { token: string; expiry: string };
      assert.equal(token.token, 'access-2', 'the refreshed token is kept for the next load');
      assert.ok(Date.parse(token.expiry) > Date.now() + 30 * 60_000);
      const text = await proxy.cli(['scheduler', 'status']);
      assert.match(text.stdout, /calendar +open +Google Calendar \(primary\)/);
    } finally {
      await proxy.stop();
    }
  });
});
