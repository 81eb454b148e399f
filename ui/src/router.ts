import { createRouter, createWebHistory } from 'vue-router'
import { session } from './api'

export const router = createRouter({
  history: createWebHistory(),
  routes: [
    { path: '/', redirect: '/streams' },
    { path: '/signin', component: () => import('./views/SignIn.vue'), meta: { public: true } },
    { path: '/connections', component: () => import('./views/Connections.vue') },
    { path: '/streams', component: () => import('./views/Streams.vue') },
    { path: '/streams/new', component: () => import('./views/StreamEditor.vue') },
    { path: '/streams/:id/edit', component: () => import('./views/StreamEditor.vue'), props: true },
    { path: '/streams/:id', component: () => import('./views/StreamDetail.vue'), props: true },
    { path: '/runs/:id', component: () => import('./views/RunMonitor.vue'), props: true },
    { path: '/usage', component: () => import('./views/Usage.vue') },
    { path: '/logs', component: () => import('./views/Logs.vue') },
    { path: '/explorer', component: () => import('./views/Explorer.vue') },
    { path: '/apikeys', component: () => import('./views/ApiKeys.vue') },
    { path: '/system', component: () => import('./views/System.vue') },
    { path: '/:rest(.*)*', component: () => import('./views/NotFound.vue') },
  ],
})

router.beforeEach((to) => {
  if (!to.meta.public && !session.key) {
    return { path: '/signin', query: to.fullPath !== '/' && to.fullPath !== '/streams' ? { next: to.fullPath } : {} }
  }
  return true
})
