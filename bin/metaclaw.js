#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/, which the package ships (built by `npm pack`); in a checkout, `npm run build`.
import('../dist/cli/main.js').catch((error) => {
  if (error && error.code === 'ERR_MODULE_NOT_FOUND') {
    console.error('metaclaw: the compiled CLI is missing; run `npm run build` in the metaclaw folder first.');
    process.exit(1);
  }
  throw error;
});
