import { z } from 'zod';

/**
 * The team store's address: a PostgreSQL URL (`postgres://` or `postgresql://`). It usually holds
 * a password, so it is only ever shown through `maskDatabaseUrl`. This module has no PostgreSQL code
 * in it: the config (and so the personal path) loads it.
 */

/** Environment variable that sets `store.url` (over the config file, under `--store`). */
export const DATABASE_URL_VARIABLE = 'METACLAW_DATABASE_URL';

export const DATABASE_URL_EXPECTED = 'a postgres:// or postgresql:// URL (or empty: the personal SQLite store)';

function isPostgresUrl(value: string): boolean {
  if (!/^postgres(ql)?:\/\//i.test(value)) return false;
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

/** Empty (the personal SQLite store) or a PostgreSQL URL. */
export const databaseUrlSchema = z.string().refine((value) => value === '' || isPostgresUrl(value), { message: `expected ${DATABASE_URL_EXPECTED}` });

/**
 * The URL with its password replaced by `****`, wherever it is written: in the authority
 * (`user:secret@host`, up to the last `@`, since an unescaped `@` may sit in a password) or as a
 * `password=` parameter. Works on text that is not a valid URL too, because error messages show
 * what was refused.
 */
export function maskDatabaseUrl(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*:)[^/?#]*@/i, '$1****@').replace(/(password=)[^&\s]*/gi, '$1****');
}
