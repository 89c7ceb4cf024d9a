import { execFileSync } from 'node:child_process';

/** Whether `command args` runs and exits 0 (within 20 s). */
export const succeeds = (command: string, args: string[]): boolean => {
  try {
    execFileSync(command, args, { stdio: 'ignore', timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
};

/** `docker compose` (the plugin), else the standalone `docker-compose`, else undefined. */
export const findComposeCommand = (): string[] | undefined =>
  succeeds('docker', ['compose', 'version'])
    ? ['docker', 'compose']
    : succeeds('docker-compose', ['version'])
      ? ['docker-compose']
      : undefined;
