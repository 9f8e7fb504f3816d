// ESLint flat config: the recommended JavaScript and TypeScript rules, type-aware, for src/, test/, bench/, scripts/ and the dashboard's pages.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'openclaw-plugin/', 'bin/', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // `const { text: _text, ...rest } = x` leaves a field out on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // Methods that implement a promise-returning interface are async without awaiting anything.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // The dashboard runs in the browser (dashboard/tsconfig.json gives it the DOM types).
    files: ['dashboard/src/**/*.ts'],
    languageOptions: { globals: globals.browser },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // node:test's describe/test/it return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'test', 'it', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
      // Tests match terminal escape sequences on purpose.
      'no-control-regex': 'off',
      // Tests read JSON answers as `any` on purpose: the assertions are the type check.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
