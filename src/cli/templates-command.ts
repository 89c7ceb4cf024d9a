import { exitCodes, type CliIo } from './cli-io.js';
import { runTemplatesEject } from './templates-eject.js';
import { runTemplatesList } from './templates-list.js';
import { runTemplatesRender } from './templates-render.js';
import { describeTemplateNames, findTemplateName, resolveTemplateDirs } from './templates-setup.js';
import { runTemplatesShow } from './templates-show.js';
import { templatesUsage } from './templates-usage.js';

export type TemplatesOptions = {
  /** The words after `templates`: the subcommand and its arguments. */
  args: readonly string[];
  configPath?: string;
  /** `--env FILE` (render only). */
  envFile?: string;
};

/**
 * `cursor-bridge templates …`: see and edit the workspace templates (the grounding text). Template
 * directories are resolved from the config as `serve` does. Bad usage or an unknown NAME → 2.
 */
export const runTemplates = async (io: CliIo, options: TemplatesOptions): Promise<number> => {
  const [action, ...args] = options.args;
  const usageError = (message: string): number => {
    io.stderr(`cursor-bridge: ${message}\n\nUsage:\n${templatesUsage}\n`);
    return exitCodes.usage;
  };
  if (options.envFile !== undefined && action !== 'render') {
    return usageError('--env only applies to `templates render`');
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
      if (name === undefined) {
        io.stderr(`cursor-bridge: unknown template "${args[0]}"; ${describeTemplateNames()}\n`);
        return exitCodes.usage;
      }
      return runTemplatesShow(io, await withConfig(), name);
    }
    case 'render':
      if (args.length > 0)
        return usageError('`templates render` takes no arguments; pass the file with --env FILE');
      return runTemplatesRender(io, await withConfig(), options.envFile);
    case 'eject':
      if (args.length > 1) return usageError('`templates eject` takes at most one DIR');
      return runTemplatesEject(io, await withConfig(), args[0]);
    default:
      return usageError(
        action === undefined ? 'missing templates subcommand' : `unknown templates subcommand "${action}"`,
      );
  }
};
