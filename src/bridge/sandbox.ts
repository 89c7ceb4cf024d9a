import { existsSync, readFileSync } from 'node:fs';

export type SandboxDecision = { enabled: boolean; reason: string };

/** Docker, containerd, Kubernetes or Podman: Cursor's local sandbox cannot work there. */
export const detectContainer = (env: Readonly<Record<string, string | undefined>>): boolean => {
  if (env['container'] !== undefined || existsSync('/.dockerenv') || existsSync('/run/.containerenv'))
    return true;
  try {
    return /docker|containerd|kubepods|podman|lxc/.test(readFileSync('/proc/1/cgroup', 'utf8'));
  } catch {
    return false;
  }
};

/**
 * `sandboxEnabled` is opt-in (or `CCR_CURSOR_SANDBOX=1`), and forced off inside containers and on
 * platforms the SDK's sandbox helper does not support. The reason is logged either way.
 */
export const decideSandbox = (
  requested: boolean,
  context: { inContainer: boolean; platform: NodeJS.Platform },
): SandboxDecision => {
  if (!requested)
    return { enabled: false, reason: 'not requested (sandboxEnabled / CCR_CURSOR_SANDBOX=1 opt in)' };
  if (context.inContainer) return { enabled: false, reason: 'forced off: running inside a container' };
  if (context.platform !== 'linux' && context.platform !== 'darwin') {
    return { enabled: false, reason: `forced off: not supported on ${context.platform}` };
  }
  return { enabled: true, reason: 'requested' };
};
