import { execFile } from 'node:child_process';

/** How long the keyboard and mouse have been idle, in ms. */
export type KeyboardIdleReader = () => Promise<number>;

/** The result of probing this machine once: a reader, or why there is none. */
export type KeyboardIdleProbe = { available: true; method: string; read: KeyboardIdleReader } | { available: false; reason: string };

interface Method {
  name: string;
  /** why it cannot apply here without running anything, or undefined */
  unusable?: string;
  read: KeyboardIdleReader;
}

const TIMEOUT_MS = 5_000;

/**
 * Finds how this machine tells keyboard idle time: macOS `ioreg` (HIDIdleTime), Linux X11
 * `xprintidle`, GNOME's idle monitor over `gdbus` (Wayland too), Windows `GetLastInputInfo` from a
 * small PowerShell call. Each candidate is tried once; the first that answers is used. Never
 * throws: with none, the reason names what was tried, and proxy idle stands in.
 */
export async function probeKeyboardIdle(platform: NodeJS.Platform = process.platform, env: NodeJS.ProcessEnv = process.env): Promise<KeyboardIdleProbe> {
  const failures: string[] = [];
  for (const method of methodsFor(platform, env)) {
    if (method.unusable) {
      failures.push(`${method.name}: ${method.unusable}`);
      continue;
    }
    try {
      const idle = await method.read();
      if (Number.isFinite(idle) && idle >= 0) return { available: true, method: method.name, read: method.read };
      failures.push(`${method.name}: unreadable answer`);
    } catch (error) {
      failures.push(`${method.name}: ${(error as Error).message}`);
    }
  }
  if (failures.length === 0) failures.push(`no method known for ${platform}`);
  return { available: false, reason: failures.join('; ') };
}

function methodsFor(platform: NodeJS.Platform, env: NodeJS.ProcessEnv): Method[] {
  if (platform === 'darwin')
    return [
      {
        name: 'ioreg HIDIdleTime',
        read: async () => {
          const out = await run('ioreg', ['-c', 'IOHIDSystem']);
          const match = /"HIDIdleTime"\s*=\s*(\d+)/.exec(out);
          if (!match) throw new Error('no HIDIdleTime in its output');
          return Number(BigInt(match[1]!) / 1_000_000n);
        },
      },
    ];
  if (platform === 'win32')
    return [
      {
        name: 'GetLastInputInfo (PowerShell)',
        read: async () => {
          const out = await run('powershell.exe', ['-NoProfile', '-NonInteractive', '-Command', WINDOWS_IDLE_SCRIPT]);
          return parseNumber(out);
        },
      },
    ];
  // Linux and the other Unixes with a desktop.
  return [
    {
      name: 'xprintidle (X11)',
      ...(env['DISPLAY'] ? {} : { unusable: 'no X display (DISPLAY is not set)' }),
      read: async () => parseNumber(await run('xprintidle', [], env)),
    },
    {
      name: 'GNOME idle monitor (gdbus)',
      ...(env['DBUS_SESSION_BUS_ADDRESS'] || env['XDG_RUNTIME_DIR'] ? {} : { unusable: 'no desktop session bus' }),
      read: async () => {
        const out = await run(
          'gdbus',
          [
            'call',
            '--session',
            '--dest',
            'org.gnome.Mutter.IdleMonitor',
            '--object-path',
            '/org/gnome/Mutter/IdleMonitor/Core',
            '--method',
            'org.gnome.Mutter.IdleMonitor.GetIdletime',
          ],
          env,
        );
        // "(uint64 12345,)"
        const match = /uint64\s+(\d+)/.exec(out);
        if (!match) throw new Error('unexpected answer');
        return Number(match[1]);
      },
    },
  ];
}

/** Milliseconds since the last keyboard or mouse input, from user32's GetLastInputInfo. */
const WINDOWS_IDLE_SCRIPT = [
  'Add-Type @"',
  'using System; using System.Runtime.InteropServices;',
  'public static class MetaclawIdle {',
  '  [StructLayout(LayoutKind.Sequential)] struct LASTINPUTINFO { public uint cbSize; public uint dwTime; }',
  '  [DllImport("user32.dll")] static extern bool GetLastInputInfo(ref LASTINPUTINFO info);',
  '  public static uint Ms() { var i = new LASTINPUTINFO(); i.cbSize = (uint)Marshal.SizeOf(i); GetLastInputInfo(ref i); return (uint)Environment.TickCount - i.dwTime; }',
  '}',
  '"@',
  '[MetaclawIdle]::Ms()',
].join('\n');

function parseNumber(text: string): number {
  const value = Number(text.trim());
  if (!Number.isFinite(value)) throw new Error(`unexpected answer ${JSON.stringify(text.trim().slice(0, 40))}`);
  return value;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: TIMEOUT_MS, env, windowsHide: true, maxBuffer: 4 * 1024 * 1024 }, (error, stdout) => {
      if (!error) return resolve(stdout);
      const code = (error as NodeJS.ErrnoException).code;
      reject(new Error(code === 'ENOENT' ? 'not installed' : error.killed ? `no answer within ${TIMEOUT_MS / 1000} s` : error.message.split('\n')[0]));
    });
  });
}
