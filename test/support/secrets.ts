/** Made-up secrets of the right shape: a fixed pseudo-random sequence, so every run tests the same strings. */
export function fake(alphabet: string, length: number, seed: number): string {
  let state = seed;
  let text = '';
  for (let index = 0; index < length; index++) {
    // mulberry32
    state = (state + 0x6d2b79f5) | 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    text += alphabet[((mixed ^ (mixed >>> 14)) >>> 0) % alphabet.length];
  }
  return text;
}

export const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const BASE64 = `${ALNUM}+/`;
export const URLSAFE = `${ALNUM}_-`;
export const HEX = '0123456789abcdef';
export const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
export const GITHUB_TOKEN = `ghp_${fake(ALNUM, 36, 1)}`;
export const PEM_BODY = [fake(BASE64, 64, 2), fake(BASE64, 64, 3), fake(BASE64, 40, 4)];
export const PRIVATE_KEY = `-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY.join('\n')}\n-----END RSA PRIVATE KEY-----`;
