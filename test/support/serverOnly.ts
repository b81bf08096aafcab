// Stands in for the `server-only` package outside Next (vitest loads web/ modules directly).
export {};
