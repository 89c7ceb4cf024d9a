import { editDistance } from '../../lib/edit-distance.js';
import { templatesUsage } from './templates-usage.js';

/** Each command's own usage lines, as a bad flag or a misplaced option prints them. */
export const commandUsage: Readonly<Record<string, string>> = {
  claude: '  cursor-bridge [--port 3456] [--config FILE] claude [claude args…]',
  codex: '  cursor-bridge [--port 3456] [--config FILE] codex [codex args…]',
  serve: '  cursor-bridge serve [--host 127.0.0.1] [--port 3456] [--config FILE] [--drain-timeout SECONDS]',
  'mcp-host': '  cursor-bridge mcp-host [--stdio] [--host 127.0.0.1] [--port 3457] [--config FILE]',
  model: '  cursor-bridge model get cursor [--config FILE]',
  ccr:
    '  cursor-bridge ccr install [--config FILE]   CCR 3: add the cursor-bridge plugin through the running\n' +
    '                                              service; CCR 1/2: the cursor-sdk transformer in config.json',
  templates: templatesUsage,
  example: '  cursor-bridge example mcp-tool-host         an example tool host for mcp-host (examples/)',
};

/** The whole `--help` text. */
export const usage = `Usage:
${commandUsage['claude']}
      Claude Code on Cursor's models: uses the running serve, or starts one for the session
${commandUsage['codex']}
      the same for Codex
${commandUsage['serve']}
${commandUsage['mcp-host']}
${commandUsage['model']}
${commandUsage['ccr']}
${templatesUsage}
${commandUsage['example']}
  cursor-bridge --help | --version

Config: --config, else $CURSOR_BRIDGE_CONFIG, else ~/.claude-code-router/config.json, else
  ~/.config/cursor-bridge/config.json (the default once CCR 3 owns ~/.claude-code-router; missing = defaults).
Env: CURSOR_API_KEY, HOST and APIKEY (override the config), LOG_LEVEL, CURSOR_BACKEND_URL (read by @cursor/sdk),
  CURSOR_BRIDGE_MCP_TOKEN (mcp-host's bearer token; else config mcpHost.token),
  CURSOR_BRIDGE_DRAIN_TIMEOUT (serve: seconds a SIGTERM drain waits for live conversations; default 30).
Templates: the grounding text (AGENTS.md, prompt head/tail, deny-hook); overrides live in cursorTemplatesDir,
  default ~/.claude-code-router/cursor-templates/; \`cursor-bridge templates --help\` says more.
Exit codes: 0 ok, 1 runtime failure (templates: a template has a problem), 2 bad usage or config.
`;

/** What follows a usage error of one command: its own usage lines, and where the rest is. */
export const usageOf = (command: string): string => {
  const lines = commandUsage[command];
  return lines === undefined
    ? `\n${usage}`
    : `Usage:\n${lines}\n(cursor-bridge --help lists every command and the environment it reads)\n`;
};

/** The known option closest to `name` (at most two edits away), for "did you mean". */
export const suggestOption = (name: string, known: readonly string[]): string | undefined => {
  let best: { option: string; edits: number } | undefined;
  for (const option of known) {
    const edits = editDistance(name, option);
    if (edits <= 2 && (best === undefined || edits < best.edits)) best = { option, edits };
  }
  return best?.option;
};

/**
 * A `node:util` parseArgs error in words: which option, and what is wrong with it (never Node's advice about
 * positionals starting with a dash). `known` are the long option names, for "did you mean".
 */
export const describeParseError = (error: unknown, known: readonly string[]): string => {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const option = /'(-{1,2}[^' ]+)/.exec(message)?.[1] ?? '';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const suggestion = suggestOption(option.replace(/^-+/, ''), known);
    return `unknown option ${option}${suggestion === undefined ? '' : ` (did you mean --${suggestion}?)`}`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (/does not take an argument/.test(message)) return `${option} takes no value`;
    if (/ambiguous/.test(message))
      return `${option} needs a value, and the next argument is an option (write ${option}=VALUE for a value starting with "-")`;
    return `${option} needs a value`;
  }
  return message.split('\n')[0] ?? message;
};
