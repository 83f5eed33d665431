// Bundles the page for the browser (React's production build): dist/app.js plus
// the page's two static files, ready to be served as they are.
import { build } from 'esbuild';
import { copyFile, mkdir } from 'node:fs/promises';

const outdir = process.argv[2] ?? 'dist';
await build({
  entryPoints: ['src/main.jsx'],
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  define: { 'process.env.NODE_ENV': '"production"' },
  outfile: `${outdir}/app.js`,
  logLevel: 'warning',
});
await mkdir(outdir, { recursive: true });
await copyFile('index.html', `${outdir}/index.html`);
await copyFile('style.css', `${outdir}/style.css`);
