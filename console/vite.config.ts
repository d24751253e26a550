import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The account console: plain TypeScript, built to `console/dist` and served under /console/ on the API's own
 * origin (the local gateway; CloudFront and S3 on AWS).
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  logLevel: 'warn',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // The CSP allows no inline script or style: every asset is a file.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
