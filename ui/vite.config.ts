import { defineConfig } from 'vite'
import vue from '@vitejs/plugin-vue'

// `npm run dev` proxies the API to a running `dbstreams serve` (DBS_API, default :8080).
export default defineConfig({
  plugins: [vue()],
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    chunkSizeWarningLimit: 1200,
    rollupOptions: {
      output: {
        manualChunks(id: string) {
          if (id.includes('node_modules/chart.js')) return 'charts'
          if (id.includes('node_modules/cytoscape') || id.includes('node_modules/dagre') || id.includes('node_modules/@dagrejs') || id.includes('node_modules/lodash')) return 'graph'
          if (id.includes('node_modules/@codemirror') || id.includes('node_modules/codemirror') || id.includes('node_modules/@lezer')) return 'editor'
          return undefined
        },
      },
    },
  },
  server: {
    proxy: { '/api': process.env.DBS_API ?? 'http://127.0.0.1:8080' },
  },
})
