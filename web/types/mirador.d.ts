/**
 * F7: the part of Mirador's API the console uses (the package ships no types). Its ES build
 * imports React, MUI and emotion, so the console's bundler builds it with the console's own
 * React, in production mode.
 */
declare module 'mirador' {
  export interface MiradorInstance {
    unmount(): void;
  }
  export function viewer(config: Record<string, unknown>): MiradorInstance;
}
