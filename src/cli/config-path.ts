import { resolve } from 'node:path';
import { defaultConfigPath } from '../config/load-config.js';
import type { CliIo } from './cli-io.js';

/** The config file a command reads: `--config` (relative to the cwd), else the default path. */
export const resolveConfigPath = (io: CliIo, configPath: string | undefined): string =>
  configPath === undefined ? defaultConfigPath(io.env, io.homedir) : resolve(io.cwd, configPath);
