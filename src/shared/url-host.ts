/** The host (and port) of a URL, for messages that must not show its path or query (which may hold secrets); undefined when it is not a URL. */
export function urlHost(url: string): string | undefined {
  try {
    return new URL(url.trim()).host;
  } catch {
    return undefined;
  }
}
