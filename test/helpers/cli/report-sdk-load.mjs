// `node --import` this into a CLI child: it writes one line to stderr once `@cursor/sdk`'s entry module
// (and so everything it imports) has been evaluated, so a test can tell whether that happened before or
// after another line the child prints.
import { registerHooks } from 'node:module';

const entry = '/node_modules/@cursor/sdk/dist/esm/index.js';
registerHooks({
  load(url, context, nextLoad) {
    const loaded = nextLoad(url, context);
    if (!url.endsWith(entry) || loaded.source === undefined) return loaded;
    // Code after the module's own body runs once its imports and its body have been evaluated.
    const report = "\n;process.stderr.write('[test probe] @cursor/sdk is loaded\\n');\n";
    return { ...loaded, source: `${String(loaded.source)}${report}` };
  },
});
