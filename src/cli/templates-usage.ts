/** The `templates` lines of the CLI usage. */
export const templatesUsage = `  cursor-bridge templates list [--config FILE]
  cursor-bridge templates show NAME [--config FILE]
  cursor-bridge templates render [--env FILE] [--config FILE]
  cursor-bridge templates eject [NAME] [--dir DIR] [--config FILE]
  cursor-bridge templates placeholders
  cursor-bridge templates live [--url URL] [--config FILE]
  cursor-bridge templates --help              what each does, the --env FILE formats, exit codes`;
