// How the console writes figures: counts, sizes, durations, ages, costs and conversation keys.

export const number = (value) => (value ?? 0).toLocaleString('en-US');
export const bytes = (value) => {
  if (value === undefined || value === null) return '–';
  const units = ['B', 'KB', 'MB', 'GB'];
  let size = value;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return `${size.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
};
export const duration = (seconds) => {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
};
export const since = (iso, now) => duration(Math.max(0, (now - Date.parse(iso)) / 1000));
export const cents = (value) => `$${((value ?? 0) / 100).toFixed(4)}`;
export const shortKey = (key) => key.slice(0, 8);
