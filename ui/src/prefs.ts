// The app's theme, kept in localStorage (App.vue toggles it); the editors and the diagram follow
// it. A module of its own so that the first screen does not load CodeMirror.
import { ref } from 'vue'

export const darkMode = ref(localStorage.getItem('dbstreams.theme') === 'dark')
