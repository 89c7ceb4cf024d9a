// `node --import` this into a CLI child: it writes one line to stderr when `@cursor/sdk`'s own code starts
// loading, so a test can tell whether that happened before or after another line the child prints.
import { registerHooks } from 'node:module';
import process from 'node:process';

let reported = false;
registerHooks({
  load(url, context, nextLoad) {
    if (!reported && url.includes('/node_modules/@cursor/sdk/')) {
      reported = true;
      process.stderr.write('[test probe] @cursor/sdk is loading\n');
    }
    return nextLoad(url, context);
  },
});
