import type { Transform } from 'node:stream';
import zlib from 'node:zlib';

/** The HTTP content codings the proxy decodes, in either direction (zlib has them all). */
export const DECODED_CODINGS = 'gzip, deflate, br';

/**
 * A decoder for a `content-encoding` value: null for none ("identity" or absent), undefined for one
 * the proxy cannot decode. zlib's decoders give out what each chunk holds, so a compressed event
 * stream that its sender flushes event by event still reaches the client event by event.
 */
export function contentDecoder(encoding: string | undefined): Transform | null | undefined {
  const coding = (encoding ?? '').trim().toLowerCase();
  if (coding === '' || coding === 'identity') return null;
  if (coding === 'gzip' || coding === 'x-gzip') return zlib.createGunzip();
  if (coding === 'deflate') return zlib.createInflate();
  if (coding === 'br') return zlib.createBrotliDecompress();
  return undefined;
}
