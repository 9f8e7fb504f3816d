import { useEffect, useState } from 'preact/hooks';

/** The page and its parameters from the address: `#/sessions/abc` → ['sessions', 'abc']. */
export function currentRoute(): string[] {
  const path = window.location.hash.replace(/^#\/?/, '');
  const parts = path
    .split('?')[0]!
    .split('/')
    .filter((part) => part !== '')
    .map(decodeURIComponent);
  return parts.length > 0 ? parts : ['overview'];
}

/** The query part of the hash (`#/memory?q=tea` → q=tea), where pages keep their search. */
export function routeQuery(): URLSearchParams {
  const at = window.location.hash.indexOf('?');
  return new URLSearchParams(at === -1 ? '' : window.location.hash.slice(at + 1));
}

export function useRoute(): string[] {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const changed = () => setRoute(currentRoute());
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}

export function link(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join('/')}`;
}
