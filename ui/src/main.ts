import { createApp } from 'vue'
import App from './App.vue'
import { router } from './router'
import './style.css'
import { installA11yFixes } from './a11y'

createApp(App).use(router).mount('#app')
installA11yFixes()
