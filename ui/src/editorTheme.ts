// CodeMirror's look for the app's light and dark themes, with highlight colors that keep 4.5:1
// contrast on the editor's background (axe-core checks it in the e2e test).
import { EditorView } from 'codemirror'
import { HighlightStyle, syntaxHighlighting } from '@codemirror/language'
import { tags as t } from '@lezer/highlight'
export { darkMode } from './prefs'

const light = HighlightStyle.define([
  { tag: t.keyword, color: '#7a0c8a' },
  { tag: [t.string, t.special(t.string)], color: '#a01616' },
  { tag: [t.number, t.bool, t.null], color: '#0b6b3a' },
  { tag: [t.lineComment, t.blockComment, t.comment], color: '#6b5200', fontStyle: 'italic' },
  { tag: [t.typeName, t.standard(t.name)], color: '#1558a8' },
  { tag: [t.propertyName], color: '#5c4300' },
  { tag: [t.operator, t.punctuation], color: '#3a3f44' },
])
const dark = HighlightStyle.define([
  { tag: t.keyword, color: '#d7a6f5' },
  { tag: [t.string, t.special(t.string)], color: '#c3e88d' },
  { tag: [t.number, t.bool, t.null], color: '#f7a76c' },
  { tag: [t.lineComment, t.blockComment, t.comment], color: '#aab4bf', fontStyle: 'italic' },
  { tag: [t.typeName, t.standard(t.name)], color: '#9ec1ff' },
  { tag: [t.propertyName], color: '#ffd27f' },
  { tag: [t.operator, t.punctuation], color: '#d0d4d8' },
])

export function editorTheme(isDark: boolean) {
  return [
    EditorView.theme(isDark
      ? {
          '&': { color: 'rgba(255,255,255,0.86)', backgroundColor: '#18181c' },
          '.cm-gutters': { backgroundColor: '#202024', color: '#a4a8ad', borderRight: '1px solid #303036' },
          '.cm-activeLine': { backgroundColor: 'rgba(255,255,255,0.04)' },
          '.cm-activeLineGutter': { backgroundColor: 'rgba(255,255,255,0.06)', color: '#d0d4d8' },
          '.cm-cursor': { borderLeftColor: '#fff' },
          '&.cm-focused .cm-selectionBackground, .cm-selectionBackground': { backgroundColor: '#34506e' },
          '.cm-tooltip': { backgroundColor: '#242428', color: 'rgba(255,255,255,0.86)', border: '1px solid #3a3a40' },
          '.cm-tooltip-autocomplete ul li[aria-selected]': { backgroundColor: '#2f5d8a', color: '#fff' },
        }
      : {
          '.cm-gutters': { backgroundColor: '#f5f5f7', color: '#5f6368', borderRight: '1px solid #e0e0e6' },
          '.cm-activeLine': { backgroundColor: 'rgba(0,0,0,0.03)' },
          '.cm-activeLineGutter': { backgroundColor: 'rgba(0,0,0,0.05)', color: '#333' },
        }, { dark: isDark }),
    syntaxHighlighting(isDark ? dark : light),
  ]
}
