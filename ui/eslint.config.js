// ESLint (flat config): JavaScript and TypeScript recommended rules, typescript-eslint for .ts
// and the <script lang="ts"> of .vue files, eslint-plugin-vue's recommended rules for templates.
// Run with `npm run lint` (ctest ui_lint).
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import vue from 'eslint-plugin-vue'
import globals from 'globals'

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'test-output/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...vue.configs['flat/recommended'],
  {
    files: ['**/*.{ts,vue}'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { ...globals.browser },
      parserOptions: { parser: tseslint.parser, extraFileExtensions: ['.vue'] },
    },
    rules: {
      // API answers are typed where the app reads them; a few generic helpers take any JSON.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Templates are laid out by hand, one long attribute list per line where it reads best.
      'vue/max-attributes-per-line': 'off',
      'vue/singleline-html-element-content-newline': 'off',
      'vue/multiline-html-element-content-newline': 'off',
      'vue/html-self-closing': 'off',
      'vue/html-indent': 'off',
      'vue/html-closing-bracket-newline': 'off',
      'vue/first-attribute-linebreak': 'off',
      // Route views are named after their screen (Streams, Logs); Icon is the app's one icon.
      'vue/multi-word-component-names': ['error', { ignores: ['Icon'] }],
    },
  },
  { files: ['src/views/**/*.vue'], rules: { 'vue/multi-word-component-names': 'off' } },
  {
    files: ['scripts/**/*.mjs', 'vite.config.ts', 'eslint.config.js'],
    languageOptions: { globals: { ...globals.node } },
  },
)
