import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { noNodeBuiltins } from './build/no-node-builtins.js';

const root = fileURLToPath(new URL('.', import.meta.url));

// Cross-origin isolation: onnxruntime-web's WASM threads need SharedArrayBuffer.
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  root,
  // The packages are used as published: their dist, through the `browser` condition of their `#platform`
  // imports (Vite's default client conditions), never their TypeScript sources.
  base: './',
  plugins: [noNodeBuiltins(fileURLToPath(new URL('../..', import.meta.url)))],
  server: { headers: isolation },
  preview: { headers: isolation },
  // onnxruntime-web finds its .wasm next to its own module; Vite's dependency pre-bundling would move it.
  optimizeDeps: { exclude: ['onnxruntime-web'] },
  build: {
    target: 'es2022',
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 4096,
    rolldownOptions: {
      // ORT starts its WASM threads as workers that import ORT's own module (its import.meta.url): in a chunk
      // of its own they load ORT alone, not the page's code with it.
      // The vlmkit packages get a chunk of their own too, so that the size report shows what they weigh.
      output: {
        codeSplitting: {
          groups: [
            { name: 'ort', test: /onnxruntime-web/ },
            { name: 'vlmkit', test: /packages\/[^/]+\/dist\// },
          ],
        },
      },
      input: { index: `${root}index.html`, harness: `${root}harness.html`, bench: `${root}bench.html` },
    },
  },
});
