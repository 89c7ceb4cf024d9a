import { exitCodes, type CliIo } from './cli-io.js';
import { runTemplatesEject } from './templates-eject.js';
import { runTemplatesList } from './templates-list.js';
import { runTemplatesLive } from './templates-live.js';
import { runTemplatesPlaceholders } from './templates-placeholders.js';
import { runTemplatesRender } from './templates-render.js';
import { describeTemplateNames, findTemplateName, resolveTemplateDirs } from './templates-setup.js';
import { runTemplatesShow } from './templates-show.js';
import { UsageError } from './usage-error.js';

export type TemplatesOptions = {
  /** The words after `templates`: the subcommand and its arguments. */
  args: readonly string[];
  configPath?: string;
  /** `--env FILE` (render only). */
  envFile?: string;
  /** `--dir DIR` (eject only). */
  dir?: string;
  /** `--url URL` (live only). */
  url?: string;
};

/** Which subcommand each subcommand-specific option belongs to. */
const optionOwners = {
  envFile: ['--env', 'render'],
  dir: ['--dir', 'eject'],
  url: ['--url', 'live'],
} as const;

/**
 * `cursor-bridge templates …`: see and edit the workspace templates (the grounding text). Template
 * directories are resolved from the config as `serve` does. An unknown NAME → 2; words that fit no
 * subcommand throw a {@link UsageError} (the CLI's usage-error path, exit 2). `templates help` is the
 * command table's.
 */
export const runTemplates = async (io: CliIo, options: TemplatesOptions): Promise<number> => {
  const [action, ...args] = options.args;
  const usageError = (message: string): never => {
    throw new UsageError(message);
  };
  const unknownName = (input: string | undefined): number => {
    io.stderr(`cursor-bridge: unknown template "${input}"; ${describeTemplateNames()}\n`);
    return exitCodes.usage;
  };
  for (const [key, [flag, owner]] of Object.entries(optionOwners)) {
    if (options[key as keyof typeof optionOwners] !== undefined && action !== owner) {
      return usageError(`${flag} only applies to \`templates ${owner}\``);
    }
  }
  const withConfig = () => resolveTemplateDirs(io, options.configPath);
  switch (action) {
    case 'list':
      if (args.length > 0) return usageError('`templates list` takes no arguments');
      return runTemplatesList(io, await withConfig());
    case 'show': {
      if (args.length !== 1)
        return usageError(`\`templates show\` takes one NAME (${describeTemplateNames()})`);
      const name = findTemplateName(args[0] ?? '');
      if (name === undefined) return unknownName(args[0]);
      return runTemplatesShow(io, await withConfig(), name);
    }
    case 'render':
      if (args.length > 0)
        return usageError('`templates render` takes no arguments; pass the file with --env FILE');
      return runTemplatesRender(io, await withConfig(), options.envFile);
    case 'eject': {
      if (args.length > 1)
        return usageError(
          '`templates eject` takes at most one NAME; copy into another directory with --dir DIR',
        );
      if (args[0] === undefined) {
        return runTemplatesEject(io, await withConfig(), {
          ...(options.dir === undefined ? {} : { targetDir: options.dir }),
        });
      }
      const name = findTemplateName(args[0]);
      if (name === undefined) {
        const code = unknownName(args[0]);
        io.stderr('(`templates eject NAME` copies one template; --dir DIR names where to copy to.)\n');
        return code;
      }
      return runTemplatesEject(io, await withConfig(), {
        name,
        ...(options.dir === undefined ? {} : { targetDir: options.dir }),
      });
    }
    case 'placeholders':
      if (args.length > 0) return usageError('`templates placeholders` takes no arguments');
      return runTemplatesPlaceholders(io);
    case 'live':
      if (args.length > 0)
        return usageError('`templates live` takes no arguments; pass the address with --url URL');
      return runTemplatesLive(io, (await withConfig()).config, options.url);
    default:
      return usageError(
        action === undefined ? 'missing templates subcommand' : `unknown templates subcommand "${action}"`,
      );
  }
};
