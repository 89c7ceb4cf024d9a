/** The `templates` lines of the CLI usage. */
export const templatesUsage = `  cursor-bridge templates list [--config FILE]
  cursor-bridge templates show NAME [--config FILE]
  cursor-bridge templates render [--env FILE] [--config FILE]
  cursor-bridge templates eject [DIR] [--config FILE]`;
