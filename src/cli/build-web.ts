// `npm run build:web` (run by `npm install`): builds the console from web/ into web/dist with Vite,
// then stamps the build with its inputs so `npm start` can tell a stale one.
import { build } from 'vite';
import { writeConsoleStamp } from '../http/console.js';

await build({ configFile: 'web/vite.config.ts', logLevel: 'warn' });
writeConsoleStamp();
console.log('console built into web/dist');
