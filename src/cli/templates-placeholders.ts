import { templatePlaceholders } from '../workspace/template-placeholders.js';
import { exitCodes, type CliIo } from './cli-io.js';

const syntax =
  'Every template may use these placeholders: {{name}} inserts a text as it is, {{json name}} as a quoted\n' +
  'JSON/JavaScript string (hooks.json, the hook script), and {{#if name}}…{{else}}…{{/if}} keeps a section\n' +
  'when a flag is true or a text is not empty. Any other name makes the template broken: the bridge keeps\n' +
  'the default (or the last good version) in its place and `cursor-bridge templates list` names the problem.\n';

/**
 * `cursor-bridge templates placeholders`: every placeholder of the table in `template-placeholders.ts`
 * with its kind, meaning and an example value, after a reminder of the syntax.
 */
export const runTemplatesPlaceholders = (io: CliIo): number => {
  const entries = templatePlaceholders.map(({ name, kind, meaning, example }) => {
    const [first = '', ...rest] = example.split('\n');
    const more = rest.map((line) => `\n            ${line}`).join('');
    return `\n${name}  (${kind})\n    ${meaning}\n    e.g.    ${first}${more}\n`;
  });
  io.stdout(`${syntax}${entries.join('')}\nMore: docs/templates.md.\n`);
  return exitCodes.ok;
};
