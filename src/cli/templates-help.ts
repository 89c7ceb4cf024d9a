import { templateNames } from '../workspace/template-store.js';
import { envBlockFormats } from '../workspace/env-block-formats.js';

const indent = (text: string, prefix: string): string =>
  text
    .split('\n')
    .map((line) => `${prefix}${line}`)
    .join('\n');

const formats = Object.values(envBlockFormats)
  .map(({ label, shape, example }) => `  ${label}: ${shape}, e.g.\n${indent(example, '      ')}\n`)
  .join('');

/**
 * What `cursor-bridge templates --help` says after the usage and flags the command table gives: every
 * subcommand, the `--env FILE` formats with an example each, exit codes.
 */
export const templatesHelpDetails = `  list          every template and the file it comes from (default or override), which templates each
                cursorMode uses, and the problems of broken overrides
  show NAME     the template in effect, verbatim on stdout (redirect it into an override file to edit)
  render        what the config's cursorMode renders for one client environment: the workspace files, the
                deny message and the prompt head and tail
  eject [NAME]  copy the packaged default of template NAME (of every template without NAME) into the
                override directory, or into --dir DIR; an existing file is never overwritten
  placeholders  every {{placeholder}} a template may use, with its meaning and an example value
  live          what the agents of a running \`cursor-bridge serve\` were given, per live conversation: the
                workspace files, the deny message, the latest prompt head and tail, and the host facts they
                were rendered from (no conversation text). Asks GET /debug/grounding at --url (default
                http://127.0.0.1:PORT, PORT from the config), which answers only on this machine, with APIKEY
                ($APIKEY, else the config's) when one is set.

Template names: ${templateNames.join(', ')}
(a unique last path segment is enough: hooks.json for .cursor/hooks.json).

render --env FILE: FILE is plain text holding a client's environment block, as the client sends it (copied
from a request, a log or a transcript; the newest block in the file is used). Without --env, or when FILE
holds no block, it renders for a client that reported no environment. The blocks it recognises:
${formats}
Exit codes: 0 ok; 1 a template has a problem (the output shows the version the bridge uses instead), a file
cannot be read, or the running bridge cannot be reached; 2 bad usage or config.
The placeholders and the template syntax: docs/templates.md.
`;
