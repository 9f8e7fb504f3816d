/**
 * Token ids and logprobs as stored: little-endian int32 and float32 arrays in BLOBs, a quarter of
 * the space of JSON text and read back without parsing. Ids are kept exactly as sampled.
 */
export function encodeTokens(tokens: readonly number[]): Buffer {
  const buffer = Buffer.alloc(tokens.length * 4);
  tokens.forEach((token, index) => buffer.writeInt32LE(token, index * 4));
  return buffer;
}

export function decodeTokens(blob: Buffer): number[] {
  const tokens = new Array<number>(blob.length / 4);
  for (let index = 0; index < tokens.length; index++) tokens[index] = blob.readInt32LE(index * 4);
  return tokens;
}

/** Logprobs as float32 (the precision Tinker's TensorData carries them in); a non-finite value is stored as 0. */
export function encodeLogprobs(logprobs: readonly number[]): Buffer {
  const buffer = Buffer.alloc(logprobs.length * 4);
  logprobs.forEach((value, index) => buffer.writeFloatLE(Number.isFinite(value) ? value : 0, index * 4));
  return buffer;
}

export function decodeLogprobs(blob: Buffer): number[] {
  const values = new Array<number>(blob.length / 4);
  for (let index = 0; index < values.length; index++) values[index] = blob.readFloatLE(index * 4);
  return values;
}
