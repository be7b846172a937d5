import { defineConfig, type Plugin } from 'vite'

/** In `vite` (dev), /portal/… gets the same page the API would serve there. */
const portalInDev: Plugin = {
  name: 'dispatch-portal-in-dev',
  configureServer(server) {
    server.middlewares.use((request, _response, next) => {
      if (request.url === '/portal' || request.url?.startsWith('/portal/')) request.url = '/console/'
      next()
    })
  },
}

/**
 * One build serves both homes: the API serves `dist/` at /console/ and at /portal/ (any other path
 * under either gets index.html), and the page picks its mode from the path. Assets are addressed
 * absolutely, under /console/assets/, so a deep link (/portal/messages/…) finds them too.
 */
export default defineConfig({
  base: '/console/',
  plugins: [portalInDev],
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    target: 'es2022',
    // The CSP allows no inline script: Vite's modulepreload polyfill would be inlined nowhere, but
    // it is not needed by the browsers the console supports.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
  server: {
    proxy: { '/api': 'http://127.0.0.1:3000', '/admin': 'http://127.0.0.1:3000' },
  },
})
