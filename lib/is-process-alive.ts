/**
 * Whether a process with this pid exists (signal 0 sends nothing). `EPERM` means it exists but belongs to
 * another user.
 */
export const isProcessAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};
